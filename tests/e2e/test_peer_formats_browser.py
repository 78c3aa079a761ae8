"""In a real browser: an InspectorRAGet run opens in Triage and in Review; a promptfoo run's own
grades are its recorded verdicts there (issue 28)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from playwright.sync_api import expect

from tests.conftest import run_cli

CLAPNQ = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "inspectorraget_clapnq.json"
PROMPTFOO_HTTP = Path(__file__).resolve().parents[1] / "fixtures" / "formats" / "promptfoo_v3_http.json"


pytestmark = pytest.mark.xdist_group("e2e_peer_formats")  # one store and one server for the module


@pytest.fixture(scope="module")
def peer_store(module_store: Path) -> Path:
    """The sample store plus run `clapnq` (the InspectorRAGet file) and run `pf` (a promptfoo
    results v3 file: an HTTP provider's JSON replies, no retrieval), each recomputed under
    t3_aware, before the server starts. The tests only read it."""
    for path, name in ((CLAPNQ, "clapnq"), (PROMPTFOO_HTTP, "pf")):
        run_cli("ingest", str(path), "--name", name, db=module_store, check=True)
        run_cli("recompute", "--run", name, "--ruleset", "t3_aware", db=module_store, check=True)
    return module_store


@pytest.fixture(scope="module")
def server(peer_store: Path, module_server: str) -> str:
    """The module's server, started once the runs are in its store."""
    return module_server


def test_an_inspectorraget_run_opens_in_triage_and_review(peer_store, server, page):
    with duckdb.connect(str(peer_store), read_only=True) as con:
        [(rid,)] = con.execute("""SELECT r.response_id FROM responses r JOIN runs USING (run_id)
                                  WHERE runs.name = 'clapnq' AND r.question_id = 'ClapNQ::103'
                                    AND r.provider = 'llama'""").fetchall()

    page.goto(f"{server}/triage?run=clapnq")
    expect(page.locator("div.answer").first).to_be_visible(timeout=30_000)
    expect(page.locator("div.question", has_text="what cells produce insulin").first).to_be_visible()

    page.goto(f"{server}/review?response={rid}")
    expect(page.get_by_text("ClapNQ::103 · llama").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Insulin comes from the liver.").first).to_be_visible()
    expect(page.get_by_text("doc-insulin").first).to_be_visible()  # the context, resolved by its document_id


def test_a_promptfoo_run_shows_its_own_grades_and_the_answer_text(peer_store, server, page):
    with duckdb.connect(str(peer_store), read_only=True) as con:
        [(rid, recorded)] = con.execute(
            """SELECT r.response_id, (SELECT max(evaluation_id) FROM evaluations e
                                      WHERE e.run_id = r.run_id AND e.ruleset = 'recorded')
               FROM responses r JOIN runs USING (run_id)
               WHERE runs.name = 'pf' AND r.provider = 'https://bot.example/query' AND r.question_id = 'test-1'
            """).fetchall()

    page.goto(f"{server}/review?response={rid}&evaluation={recorded}")
    # the answer, not the provider's JSON reply (whose other fields are shown as the response's metadata)
    expect(page.locator("div.answer").first).to_have_text("The fire brigade answers on 112.", timeout=30_000)
    expect(page.get_by_text("promptfoo:contains").first).to_be_visible()
    expect(page.get_by_text("recorded by the source evaluator").first).to_be_visible()
    expect(page.get_by_text("The run records no retrieval").first).to_be_visible()

    page.goto(f"{server}/before_after?run=pf&a=recorded&b=t3_aware")
    expect(page.get_by_text("A = recorded").first).to_be_visible(timeout=30_000)
