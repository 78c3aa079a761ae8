"""In a real browser: Triage highlights the offending text, and model text never runs as code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from playwright.sync_api import expect

from tests.conftest import run_cli

HOSTILE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "hostile_run.jsonl"


pytestmark = pytest.mark.xdist_group("e2e_review")  # one store and one server for the module


@pytest.fixture(scope="module")
def with_hostile_run(module_store: Path) -> Path:
    """Adds run `hostile` (scripts and <img onerror> in every text field) before the server starts.
    The tests only read the store."""
    run_cli("ingest", str(HOSTILE_RUN), "--name", "hostile", "--profile", "clearpath", db=module_store, check=True)
    run_cli("recompute", "--run", "hostile", "--ruleset", "t3_aware", db=module_store, check=True)
    return module_store


@pytest.fixture(scope="module")
def server(with_hostile_run: Path, module_server: str) -> str:
    """The module's server, started once the run is in its store."""
    return module_server


def test_triage_highlights_spans_and_never_runs_injected_script(with_hostile_run, server, page):
    with duckdb.connect(str(with_hostile_run), read_only=True) as con:
        [(spans,)] = con.execute(
            """SELECT f.spans FROM flags f JOIN responses r USING (response_id) JOIN runs USING (run_id)
               WHERE runs.name = 'clearpath' AND f.flag = 'potential_hallucination'
                 AND f.spans::VARCHAR LIKE '%unverified_price%'
               ORDER BY r.response_id LIMIT 1""").fetchall()
    price = next(s["text"] for s in json.loads(spans) if s["kind"] == "unverified_price")
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    page.goto(f"{server}/triage?run=clearpath&flag=potential_hallucination")
    mark = page.locator('mark[data-kinds~="unverified_price"]', has_text=price).first
    expect(mark).to_be_visible(timeout=30_000)
    expect(mark).to_have_attribute("title", "Unverified price")
    expect(page.get_by_text("Some details in this response could not be verified against our documentation.")
           .first).to_be_visible()

    page.goto(f"{server}/triage?run=hostile")
    answer = page.locator("div.answer").first
    expect(answer).to_contain_text("<script>window.__pwned='answer'; alert('answer')</script>", timeout=30_000)
    expect(answer).to_contain_text("[click me](javascript:alert(1)) **bold** $x^2$")
    expect(page.locator("div.question").first).to_contain_text("<script>alert('question')</script>")
    expect(answer.locator("mark", has_text="$29/month")).to_be_visible()
    expect(page.locator("img[src='x']")).to_have_count(0)  # no injected image exists to fire onerror
    expect(page.locator("script", has_text="pwned")).to_have_count(0)
    expect(page.locator("a[href^='javascript']")).to_have_count(0)
    expect(page.get_by_text("https://evil.example/login").first).to_be_visible()
    expect(page.locator("a[href*='evil.example']")).to_have_count(0)  # no autolinked URL or e-mail
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []


def test_triage_reasons_read_clean_and_the_agreement_tab_runs_when_opened(server, page):
    page.goto(f"{server}/triage?run=ramayana")
    expect(page.locator("div.answer").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("routing_check").first).to_be_visible()
    expect(page.get_by_text("<wbr>")).to_have_count(0)  # no markup shown as text in the check reasons
    expect(page.get_by_text("How often reviewers overturned")).to_have_count(0)
    page.get_by_role("tab", name="Reviewer overrides vs evaluator").click()
    expect(page.get_by_text("How often reviewers overturned this evaluation's automated verdicts")
           ).to_be_visible(timeout=30_000)
    expect(page).to_have_url(re.compile(r"[?&]tab=Reviewer"))
    expect(page.locator("div.answer")).to_have_count(0)
