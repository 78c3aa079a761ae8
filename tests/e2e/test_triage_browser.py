"""In a real browser: Triage's table view, a sort, two rows selected and overridden together."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
from playwright.sync_api import expect

ROW_HEIGHT = 35  # st.dataframe's default row height, px; the header row is as high


def choose(page, label: str, option: str, in_url: str) -> None:  # type: ignore[no-untyped-def]
    """Pick an option of a URL-bound selectbox; until the URL says so, pick again: a pick made while the
    page's first run is still settling can be undone by that run."""
    for attempt in range(3):
        page.get_by_role("combobox", name=label).click()
        page.get_by_role("option", name=option).click()
        try:
            expect(page).to_have_url(re.compile(in_url), timeout=10_000)
            return
        except AssertionError:
            if attempt == 2:
                raise


def test_table_view_sort_select_two_rows_and_bulk_override(sample_store: Path, streamlit_server, page):
    page.goto(f"{streamlit_server}/triage?run=clearpath")
    expect(page.locator("div.answer").first).to_be_visible(timeout=30_000)

    choose(page, "View", "Table", r"[?&]view=table")
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible(timeout=30_000)

    choose(page, "Sort by", "Verdict (failing first)", r"[?&]sort=verdict")
    expect(page.get_by_role("combobox", name="Sort by")).to_have_value("Verdict (failing first)")

    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible(timeout=30_000)
    grid.hover()
    box = grid.bounding_box()
    assert box is not None
    for row in (0, 1):  # the row markers at the left edge select rows
        page.mouse.click(box["x"] + 12, box["y"] + ROW_HEIGHT * (row + 1) + ROW_HEIGHT / 2)
        expect(page.get_by_text(f"{row + 1} selected")).to_be_visible(timeout=30_000)

    page.get_by_role("textbox", name="Your name").fill("Priya")
    page.get_by_role("button", name="Start reviewing").click()
    page.get_by_text("Override to a value").click()
    page.get_by_role("radiogroup", name="New value").get_by_text("PASS", exact=True).click()
    page.get_by_role("textbox", name="Reason (required)").fill("prices are on the pricing page")
    page.get_by_role("textbox", name="Reason (required)").press("Enter")
    page.get_by_role("button", name="Apply to 2 responses").click()
    expect(page.get_by_text("Saved 2 overrides: Overall verdict of 2 responses.")).to_be_visible(timeout=30_000)

    with duckdb.connect(str(sample_store), read_only=True) as con:
        rows = con.execute("SELECT target, old_value, new_value, reason, reviewer, count(*), "
                           "count(DISTINCT client_token) FROM overrides GROUP BY ALL").fetchall()
    assert rows == [("overall", "FAIL", "PASS", "prices are on the pricing page", "Priya", 2, 1)]  # failing first
