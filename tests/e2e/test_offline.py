"""Nothing a page loads comes from another host (fonts, favicon, telemetry): the dashboard
works on a machine with no network, and a reviewer's browser tells no third party what it reads."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.xdist_group("e2e_offline")  # one server for the module

PAGES = [("/", "Overview"), ("/before_after?run=ramayana_v2", "Before/after"),
         ("/compare?a=ramayana_v1&b=ramayana_v2", "Compare runs"), ("/metrics", "Metrics"),
         ("/triage?run=clearpath", "Triage"), ("/review?run=clearpath", "Review")]


@pytest.mark.parametrize(("path", "title"), PAGES, ids=[title for _, title in PAGES])
def test_a_page_requests_nothing_from_another_host(module_server, page, path, title):
    local = urlsplit(module_server).netloc
    elsewhere: list[str] = []

    def record(route):  # type: ignore[no-untyped-def]
        if urlsplit(route.request.url).netloc not in (local, ""):
            elsewhere.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", record)
    page.goto(f"{module_server}{path}")
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=30_000)
    page.wait_for_load_state("networkidle")
    assert elsewhere == []
    favicon = page.locator('link[rel*="icon"]').first.get_attribute("href") or ""
    assert urlsplit(favicon).netloc in ("", local), favicon
