"""The Rule lab in real headless Chromium: edit a pattern, see the flip, save, recompute, and find
the new rule set on Before/after."""

from __future__ import annotations

import re

from playwright.sync_api import expect

NEW_REFUSAL = "the text (states|says)"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def preview_with_refusal(page, url: str, pattern: str) -> None:  # type: ignore[no-untyped-def]
    """Open the Rule lab on the sample ramayana run, add a refusal pattern and press Preview."""
    page.goto(f"{url}/rule_lab?run=ramayana&base=t3_aware")
    expect(page.get_by_role("heading", name="Rule lab", exact=True)).to_be_visible(timeout=30_000)
    expect(page.locator(IDLE)).to_be_attached(timeout=30_000)
    patterns = page.get_by_label("Refusal patterns", exact=True)
    expect(patterns).to_be_visible(timeout=30_000)
    expect(page.locator(IDLE)).to_be_attached(timeout=30_000)
    patterns.fill(f"{patterns.input_value()}\n{pattern}")
    patterns.press("Tab")  # Streamlit takes a text area's value when it loses focus
    expect(patterns).to_have_value(re.compile(re.escape(pattern) + "$"))
    page.get_by_role("button", name="Preview").click()


def test_edit_preview_save_recompute_then_before_after(streamlit_server, page) -> None:  # type: ignore[no-untyped-def]
    # The first request of a fresh server: its form must keep the first submit (dashboard/shell.py).
    preview_with_refusal(page, streamlit_server, NEW_REFUSAL)

    flipped = page.get_by_test_id("stMetric").filter(has_text="Flipped responses")
    expect(flipped.get_by_test_id("stMetricValue")).to_have_text(re.compile(r"^[1-9]\d*$"), timeout=30_000)

    page.get_by_label("Name (letters, digits, _ or -)").fill("strict_refusals")
    page.get_by_role("button", name="Save as").click()
    expect(page.get_by_text("Saved strict_refusals version 1")).to_be_visible(timeout=30_000)

    page.get_by_role("button", name="Recompute with it").click()
    expect(page.get_by_text(re.compile(r"Stored evaluation \d+: ramayana under strict_refusals"))).to_be_visible(
        timeout=120_000)
    expect(page.get_by_test_id("stProgress")).to_contain_text("Done")
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)

    page.get_by_role("link", name="Open Before/after (A = base, B = new rule set)").click()
    expect(page.get_by_role("heading", name="Before/after", exact=True)).to_be_visible(timeout=30_000)
    expect(page.locator(IDLE)).to_be_attached(timeout=30_000)
    expect(page.get_by_role("combobox", name="B — after")).to_have_value("strict_refusals")
    expect(page.get_by_role("combobox", name="A — before")).to_have_value("t3_aware")
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    assert "b=strict_refusals" in page.url, page.url


def test_many_flips_page_through_in_the_browser(streamlit_server, page) -> None:  # type: ignore[no-untyped-def]
    preview_with_refusal(page, streamlit_server, ".")  # every answer a refusal: every pass now fails

    caption = page.get_by_text(re.compile(r"^Page 1 of \d+ \([\d,]+ flips, 50 per page\)\.$"))
    expect(caption).to_be_visible(timeout=30_000)
    pager = page.get_by_test_id("stPagination")
    expect(pager.get_by_test_id("stPaginationPageActive")).to_have_text("1")
    pager.get_by_test_id("stPaginationNext").click()
    expect(page.get_by_text(re.compile(r"^Page 2 of \d+ \("))).to_be_visible(timeout=30_000)
    expect(pager.get_by_test_id("stPaginationPageActive")).to_have_text("2")
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
