"""Markup in every untrusted field stays text on all six pages, in real headless Chromium.

A run whose name, providers, model, question ids, routing, comments, answers and metadata carry
live-looking markup (links, images with handlers, inline styles, Markdown links, javascript: URLs)
is ingested beside the samples; each page is opened on it and must show the markup as text:
no link to evil.example, no <img src=x>, no element with the data's 90px font size, no dialog.
(Templates are validated to T1/T2/T3 at ingest, so they cannot carry markup.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import duckdb
import pytest
from playwright.sync_api import Page, expect

from tests.conftest import run_cli
from tests.e2e.legible import settled

LINK = '<a href="https://evil.example">clickme</a>'
IMG = "<img src=x onerror=alert(1)>"
BIG = '<span style="font-size:90px">BIG</span>'
MD_LINK = "[link](https://evil.example)"
JS = "javascript:alert(1)"
RUN = "<img src=x onerror=alert(1)>run"  # short enough to be shown whole (40 characters)
RUN_B = "<b>after</b><img src=x onerror=alert(2)>"
PROVIDERS = (BIG, '<a href="https://evil.example">p</a>')
SHOWN_SOMEWHERE = ("onerror=alert(1)", "font-size", "evil", "clickme", "BIG")  # literal text a page shows


def rows(answer_word: str, verdict: str) -> Iterator[dict]:
    for k in range(3):
        for provider in PROVIDERS:
            yield {
                "question_id": f'<a href="https://evil.example">q{k}</a>', "provider": provider,
                "model": MD_LINK, "classification": IMG, "expected_routing": BIG,
                "question": f"{LINK} {MD_LINK} How much is Pro? {k}",
                "answer": f"{BIG} {IMG} {MD_LINK} {JS} Pro costs {answer_word} a month from Evil Corp.",
                "comment": f"{LINK} {MD_LINK} {JS} {BIG}",
                "retrieved": [{"id": IMG, "text": f"{BIG} Clearpath Pro costs $12/month.", "score": 0.8}],
                "recorded_checks": {"no_hallucination": verdict, "retrieval_check": "PASS"},
                "answerable": True, LINK: BIG, "<b>meta</b>": {IMG: MD_LINK},
            }


pytestmark = pytest.mark.xdist_group("e2e_markup_sweep")  # one store and one server for the module


@pytest.fixture(scope="module")
def markup_store(module_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample store plus the hostile runs RUN and RUN_B (same questions, other answers and verdicts).
    The tests only read it."""
    folder = tmp_path_factory.mktemp("markup_runs")
    for name, word, verdict in ((RUN, "$29", "PASS"), (RUN_B, "$39", "FAIL")):
        path = folder / f"{len(name)}-{word[1:]}.jsonl"
        path.write_text("\n".join(json.dumps(row) for row in rows(word, verdict)) + "\n")
        run_cli("ingest", str(path), "--name", name, "--profile", "clearpath", db=module_store, check=True)
    run_cli("recompute", "--run", RUN, "--ruleset", "t3_aware", db=module_store, check=True)
    run_cli("metrics", "--run", RUN, db=module_store, check=True)
    return module_store


@pytest.fixture(scope="module")
def markup_server(markup_store: Path, module_server: str) -> str:
    """The module's server, started once the runs are in its store."""
    return module_server


def a_response(db: Path) -> int:
    with duckdb.connect(str(db), read_only=True) as con:
        return int(con.execute("SELECT min(response_id) FROM responses WHERE run_id = "
                               "(SELECT run_id FROM runs WHERE name = ?)", [RUN]).fetchall()[0][0])


def pages(db: Path) -> dict[str, str]:
    return {
        "Overview": "/?" + urlencode({"run": RUN, "with": RUN_B, "eval": "recorded"}),
        "Before/after": "/before_after?" + urlencode({"run": RUN}),
        "Compare runs": "/compare?" + urlencode({"run": RUN, "against": RUN_B, "ruleset": "recorded"}),
        "Metrics": "/metrics?" + urlencode({"run": RUN}),
        "Triage": "/triage?" + urlencode({"run": RUN}),
        "Review": f"/review?response={a_response(db)}",
    }


def assert_inert(page: Page, title: str) -> None:
    expect(page.locator('a[href*="evil.example"]'), title).to_have_count(0)
    expect(page.locator('[*|href*="evil.example"]'), title).to_have_count(0)  # SVG links: xlink:href too
    expect(page.locator("svg a"), title).to_have_count(0)  # Plotly draws <a> in a label as a live SVG link
    expect(page.locator('img[src="x"]'), title).to_have_count(0)
    expect(page.locator('[style*="90px"]'), title).to_have_count(0)  # HTML and Plotly's SVG tspans
    expect(page.locator('[data-testid="stException"]'), title).to_have_count(0)
    hijacked = page.evaluate("() => window.__pwned || null")
    assert hijacked is None, (title, hijacked)


@pytest.mark.parametrize("title", ["Overview", "Before/after", "Compare runs", "Metrics", "Triage", "Review"])
def test_markup_from_the_data_stays_text(markup_server: str, markup_store: Path, page: Page, title: str) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(markup_server + pages(markup_store)[title])
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=60_000)
    settled(page, timeout=60_000)
    assert_inert(page, title)
    text = page.evaluate("() => document.body.innerText").replace("\u2060", "")
    assert any(marker in text for marker in SHOWN_SOMEWHERE), (title, text[:2000])
    visible_markup = [m for m in (RUN, LINK, BIG, IMG, MD_LINK) if m in text]
    assert visible_markup, (title, text[:2000])  # the markup itself is on the page, as characters
    assert dialogs == [], (title, dialogs)


def test_chart_labels_show_the_markup_as_characters(markup_server: str, markup_store: Path, page: Page) -> None:
    page.goto(markup_server + pages(markup_store)["Overview"])
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)
    settled(page, timeout=60_000)
    ticks = page.locator(".js-plotly-plot .ytick text, .js-plotly-plot .xtick text, .js-plotly-plot .legendtext")
    expect(ticks.first).to_be_attached()
    labels = [t.replace("\u2060", "") for t in ticks.all_text_contents()]
    assert BIG in labels  # the provider, as its characters: entities decoded to text, no tag applied
    assert RUN in labels  # the run in the legend
    expect(page.locator(".js-plotly-plot a")).to_have_count(0)
    expect(page.locator('.js-plotly-plot [style*="90px"]')).to_have_count(0)


def test_the_open_flip_tab_goes_into_the_url(markup_server: str, markup_store: Path, page: Page) -> None:
    page.goto(markup_server + pages(markup_store)["Compare runs"])
    expect(page.get_by_role("tab", name="Regressions")).to_be_visible(timeout=60_000)
    settled(page, timeout=60_000)
    page.get_by_role("tab", name="Fixes").click()
    expect(page).to_have_url(re.compile(r"[?&]flips=Fixes"), timeout=30_000)
    settled(page, timeout=60_000)
    assert_inert(page, "Compare runs, Fixes")
