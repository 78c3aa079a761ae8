"""Human labels page (/agreement) in real Chromium: open it on a run with annotations, follow a confusion-matrix cell
to its responses, and one of them to Review."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from evaluator.queries import agreement as q
from evaluator.store.db import connect
from tests.annotated_store import annotate
from tests.e2e.legible import settled


@pytest.fixture
def server(sample_store: Path, request: pytest.FixtureRequest) -> str:
    annotate(sample_store, "clearpath", limit=40)  # before the dashboard starts
    return str(request.getfixturevalue("streamlit_server"))


def busiest_cell(db: Path) -> tuple[str, str, int, int]:
    """(check verdict, human verdict, a response behind that cell, evaluation) for no_hallucination."""
    with connect(db, read_only=True) as con:
        run_id = q.run_id(con, "clearpath")
        assert run_id is not None
        evaluation_id = q.latest_evaluation(con, run_id)
        assert evaluation_id is not None
        [human] = [m for m in q.mappings(con, run_id, evaluation_id, []) if m.mapping.check == "no_hallucination"]
        confusion = q.check_agreement(con, run_id, evaluation_id, human)["confusion"]
        verdict, person = max(((c, h) for c in ("PASS", "FAIL") for h in ("PASS", "FAIL")),
                              key=lambda cell: confusion.cell(*cell))
        _, rows = q.cell_page(con, run_id, evaluation_id, human, verdict, person, limit=1)
    return verdict, person, int(rows[0]["response_id"]), evaluation_id


def test_a_confusion_matrix_cell_leads_to_its_responses_and_on_to_review(server: str, sample_store: Path,
                                                                         page) -> None:  # type: ignore[no-untyped-def]
    verdict, person, response_id, evaluation_id = busiest_cell(sample_store)
    page.goto(f"{server}/agreement?run=clearpath")
    expect(page.get_by_role("heading", name="Where the evaluator disagrees with them")).to_be_visible(timeout=60_000)
    cell = page.locator(f'a[href*="cell={verdict}%3A{person}"][href*="no_hallucination"]').first
    expect(cell).to_be_visible()
    settled(page)
    cell.click()
    expect(page.get_by_role("heading", name=re.compile(f"Check {verdict}, humans {person}"))).to_be_visible(
        timeout=60_000)
    review = page.locator(f'a[href*="review?response={response_id}&evaluation={evaluation_id}"]').last
    settled(page)  # (a link clicked while the page still runs may open Review with the page's own query)
    review.click()
    expect(page).to_have_url(re.compile(f"/review\\?.*response={response_id}"), timeout=60_000)
    expect(page.get_by_role("heading", name="Review", exact=True)).to_be_visible(timeout=60_000)
