"""The dashboard in real headless Chromium: the runs of the store are visible, and a run the
CLI ingests while the server runs appears on the next load, without a restart."""

from __future__ import annotations

from playwright.sync_api import expect


def test_dashboard_lists_the_runs_and_picks_up_a_new_one(streamlit_server, page, sample_store, cli, tmp_path):
    page.goto(f"{streamlit_server}/")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=30_000)
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible(timeout=30_000)
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar).to_contain_text(str(sample_store.name))
    # The run picker offers every run of the store.
    picker = sidebar.locator('[data-testid="stSelectbox"]').first
    picker.click()
    options = page.locator('[role="option"]')
    expect(options.filter(has_text="ramayana_v2")).to_be_visible()
    expect(options.filter(has_text="clearpath")).to_be_visible()
    page.keyboard.press("Escape")

    run = tmp_path / "late_run.jsonl"
    run.write_text('{"question_id": "q1", "question": "Q?", "provider": "p", "answer": "A"}\n')
    cli("ingest", str(run), db=sample_store, check=True)
    page.reload()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible(timeout=30_000)
    sidebar.locator('[data-testid="stSelectbox"]').first.click()
    expect(page.locator('[role="option"]').filter(has_text="late_run")).to_be_visible(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
