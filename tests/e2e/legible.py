"""What a page at 1280×800 must not do (issue 31), shared by the browser tests that check it:
cut a headline number (an st.metric label or value) with an ellipsis, or show a Streamlit
exception box."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

# Each metric's label and value: the text, and whether the box that holds it is narrower than the
# text (Streamlit's stMarkdownEllipsis cuts with "…" by CSS, so the DOM text stays whole).
CUT_METRICS = """() => [...document.querySelectorAll('[data-testid=stMetric]')].flatMap(metric =>
  ['stMetricLabel', 'stMetricValue'].map(part => {
    const box = metric.querySelector(`[data-testid=${part}]`);
    if (!box) return null;
    const cut = [box, ...box.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1
        && getComputedStyle(e).overflow !== 'visible') || box.innerText.trim().endsWith('…');
    return {part, text: box.innerText, cut};
  }).filter(Boolean))"""


def settled(page: Page, timeout: int = 30_000) -> None:
    """The app has finished its run and drawn it: no stale element of the previous run, no widget
    still waiting for its lazily loaded code, no exception box."""
    expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_be_attached(
        timeout=timeout)
    expect(page.locator('[data-stale="true"]')).to_have_count(0, timeout=30_000)
    # Streamlit loads each widget's code (selectbox, page link, text input…) on first use and shows
    # a stSkeleton until it arrives: on a busy machine a finished run can stay undrawn for seconds.
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=30_000)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def cut_metrics(page: Page) -> list[dict]:
    """The metric labels and values on the page, each with whether it is cut."""
    return page.evaluate(CUT_METRICS)


def assert_whole(page: Page, where: str, screenshot: Path) -> list[dict]:
    """A full-page screenshot at `screenshot`, then: no exception box, no metric cut. Returns the metrics."""
    page.screenshot(path=str(screenshot), full_page=True)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    metrics = cut_metrics(page)
    cut = [m for m in metrics if m["cut"]]
    assert not cut, f"{where}: truncated at {page.viewport_size}: {cut} (see {screenshot})"
    return metrics
