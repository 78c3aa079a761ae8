"""The four PM pages in real headless Chromium: each renders its plotly charts and no error."""

from __future__ import annotations

from playwright.sync_api import expect

PM_PAGES = {
    "": "Overview",  # the default page, served at /
    "before_after": "Before/after",
    "compare": "Compare runs",
    "metrics": "Metrics",
}


def test_pm_pages_render_their_charts_without_errors(streamlit_server, page, sample_store, cli):
    # The metrics page charts stored TRUST-SCORE results; the server reads the store per page run.
    cli("metrics", "--run", "ramayana", db=sample_store, check=True)
    for path, title in PM_PAGES.items():
        page.goto(f"{streamlit_server}/{path}?run=ramayana")
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=30_000)
        expect(page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')).to_be_attached(
            timeout=30_000)
        charts = page.locator(".js-plotly-plot")
        expect(charts.first).to_be_visible(timeout=30_000)
        assert charts.count() >= 1, path
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        expect(page.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
        assert "run=ramayana" in page.url, page.url  # the view stays shareable as a link
