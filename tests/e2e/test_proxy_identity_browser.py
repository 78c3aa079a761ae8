"""Behind an authenticating proxy (EVALUATOR_IDENTITY_HEADER), the reviewer is the user the proxy
names in its header: nobody types a name, and a request without the header is read-only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import serve

HEADER = "X-Forwarded-Email"


pytestmark = pytest.mark.xdist_group("e2e_proxy_identity")  # one server for the module


@pytest.fixture(scope="module")
def proxied_server(module_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server behind the "proxy" for the module; its tests save nothing."""
    with serve(module_store, tmp_path_factory.mktemp("proxied") / "streamlit.log",
               EVALUATOR_IDENTITY_HEADER=HEADER) as url:
        yield url


def _response_id(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute("SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                               "WHERE runs.name = 'clearpath'").fetchall()[0][0])


def test_the_proxys_user_reviews_without_typing_a_name(proxied_server, browser, module_store):
    context = browser.new_context(extra_http_headers={HEADER: "dana@example.com"})
    try:
        page = context.new_page()
        page.goto(f"{proxied_server}/review?response={_response_id(module_store)}")
        expect(page.get_by_text("Reviewing as dana@example.com")).to_be_visible(timeout=30_000)
        expect(page.get_by_label("Your name", exact=True)).to_have_count(0)
    finally:
        context.close()


def test_without_the_proxys_header_the_page_is_read_only(proxied_server, page, module_store):
    page.goto(f"{proxied_server}/review?response={_response_id(module_store)}")
    expect(page.get_by_text("this request has none: the page is read-only")).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="Save override")).to_be_disabled()
