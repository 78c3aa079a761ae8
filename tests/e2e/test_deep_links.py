"""A fresh server's *first* request to each deep link renders that page inside app.py's
navigation (pages/ is a top-level folder, which Streamlit's legacy mode would otherwise serve
bare on a first request: dashboard/shell.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

NAV_TITLES = ("Overview", "Before/after", "Compare runs", "Metrics", "Triage", "Review")

DEEP_LINKS = [
    ("/", "Overview"),
    ("/before_after?run=ramayana_v2", "Before/after"),
    ("/compare?a=ramayana_v1&b=ramayana_v2", "Compare runs"),
    ("/metrics?run=clearpath", "Metrics"),
    ("/triage?run=clearpath&verdict=FAIL", "Triage"),
    ("/review?run=clearpath", "Review"),
]


@pytest.mark.parametrize(("path", "title"), DEEP_LINKS, ids=[title for _, title in DEEP_LINKS])
def test_first_request_to_a_deep_link_renders_that_page_in_the_app(streamlit_server, page, path, title):
    page.goto(f"{streamlit_server}{path}")
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=30_000)
    nav = page.locator('[data-testid="stSidebarNav"]')
    for name in NAV_TITLES:  # the app's navigation, not the legacy one of pages/ file names
        expect(nav.get_by_text(name, exact=True)).to_be_visible()
    expect(nav).not_to_contain_text("compare_runs")
    # The page path and every parameter of the link survive the switch to the app's navigation.
    route, _, query = path.partition("?")
    expect(page).to_have_url(re.compile(re.escape(route) + (r"\?" if query else "")))
    for pair in filter(None, query.split("&")):
        assert pair in page.url.split("?", 1)[1].split("&"), (pair, page.url)
    assert page.locator('[data-testid="stException"]').count() == 0
    # Reviewers see the app, not Streamlit's developer menu (.streamlit/config.toml: toolbarMode viewer).
    expect(page.get_by_role("button", name="Deploy")).to_have_count(0)
    expect(page.locator('[data-testid="stAppDeployButton"]')).to_have_count(0)

