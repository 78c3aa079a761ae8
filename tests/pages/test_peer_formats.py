"""Every page renders a run from each peer's format (AppTest on the real app)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"
RUNS = {
    "irg": (FORMATS / "inspectorraget_clapnq.json",),
    "pf": (FORMATS / "promptfoo_results.json",),
    "insp": (FORMATS / "inspect_log.json",),
    "ragas": (FORMATS / "ragas_dataset.csv", "--map",
              "question=user_input,answer=response,retrieved=retrieved_contexts,gold_answers=reference"),
}
PAGES = ["pages/overview.py", "pages/before_after.py", "pages/compare.py", "pages/triage.py", "pages/review.py",
         "pages/metrics.py", "pages/agreement.py"]


@pytest.fixture(scope="module")
def peer_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("peers") / "store.duckdb"
    for name, (path, *extra) in RUNS.items():
        run_cli("ingest", str(path), "--name", name, *extra, db=db, check=True)
        run_cli("recompute", "--run", name, "--ruleset", "t3_aware", db=db, check=True)
        run_cli("metrics", "--run", name, db=db, check=True)
    return db


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("run", list(RUNS))
def test_every_page_renders_a_peer_run(make_app, rendered, peer_store: Path, page: str, run: str) -> None:
    app = make_app(peer_store, page, run=run)
    assert not app.exception
    assert rendered(app)


def test_review_shows_an_inspectorraget_response(make_app, rendered, query, peer_store: Path) -> None:
    [(rid,)] = query(peer_store, """SELECT r.response_id FROM responses r JOIN runs USING (run_id)
                                    WHERE runs.name = 'irg' AND r.question_id = 'ClapNQ::103'
                                      AND r.provider = 'llama'""")
    app = make_app(peer_store, "pages/review.py", response=rid, state={"reviewer": "alice"})
    texts = " ".join(rendered(app))
    assert "ClapNQ::103 · llama · Llama &#40;13b-chat&#41;" in texts  # provider = model_id, then its name


def _irg_response(query, peer_store: Path) -> int:  # type: ignore[no-untyped-def]
    [(rid,)] = query(peer_store, """SELECT r.response_id FROM responses r JOIN runs USING (run_id)
                                    WHERE runs.name = 'irg' AND r.question_id = 'ClapNQ::103'
                                      AND r.provider = 'llama'""")
    return int(rid)


def test_review_shows_the_imported_ratings_and_the_run_files_scores(make_app, query, peer_store: Path) -> None:
    rid = _irg_response(query, peer_store)
    app = make_app(peer_store, "pages/review.py", response=rid, state={"reviewer": "alice"})
    assert {"Human ratings", "Scores from the run file"} <= {s.value for s in app.subheader}
    ratings = next(d.value for d in app.dataframe if {"label", "annotator", "value"} <= set(d.value.columns))
    stored = query(peer_store, "SELECT count(*) FROM annotations WHERE response_id = ?", [rid])[0][0]
    assert len(ratings) == stored > 0 and set(ratings["source"]) == {"imported"}
    scores = next(d.value for d in app.dataframe if list(d.value.columns) == ["metric", "value"])
    assert len(scores) > 0


def test_a_rating_typed_in_review_is_stored_as_the_reviewers(make_app, query, peer_store: Path) -> None:
    # another response than the one whose imported ratings are checked above (the store is shared)
    [(rid,)] = query(peer_store, """SELECT max(r.response_id) FROM responses r JOIN runs USING (run_id)
                                    WHERE runs.name = 'irg'""")
    assert rid != _irg_response(query, peer_store)
    app = make_app(peer_store, "pages/review.py", response=rid, state={"reviewer": "alice"})
    label = app.selectbox(key="rating_label").value
    scale = query(peer_store, """SELECT scale_values FROM labels l JOIN responses r USING (run_id)
                                 WHERE r.response_id = ? AND l.label = ?""", [rid, label])[0][0]
    value = json.loads(scale)[0]
    app.session_state[f"rating_value_{label}"] = value
    app.text_input(key="rating_reason").input("read it twice")
    next(b for b in app.button if b.label == "Save rating").click().run()
    assert not app.exception
    rows = query(peer_store, "SELECT annotator, label, value, reason, source FROM annotations "
                             "WHERE response_id = ? AND source = 'review'", [rid])
    assert rows == [("alice", label, value, "read it twice", "review")]
