"""Human labels page (pages/agreement.py): annotators vs each other (alpha, most-disagreed responses)
and checks vs the humans (confusion matrix whose cells link to the responses behind them), on the real app and store."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest

from dashboard.fmt import percent
from evaluator.queries import agreement as q
from evaluator.store.db import connect
from tests.annotated_store import annotate

PAGE = "pages/agreement.py"


@pytest.fixture
def annotated(sample_store: Path) -> Path:
    annotate(sample_store, "clearpath", limit=40)
    return sample_store


def links(app, page: str) -> list:  # type: ignore[no-untyped-def]
    return [e.proto for e in app.get("page_link") if e.proto.page == page]


def expected(db: Path) -> dict:
    with connect(db, read_only=True) as con:
        run_id = q.run_id(con, "clearpath")
        assert run_id is not None
        evaluation_id = q.latest_evaluation(con, run_id)
        assert evaluation_id is not None
        [human] = [m for m in q.mappings(con, run_id, evaluation_id, []) if m.mapping.label == "faithfulness"]
        return {"alphas": {d["label"]: q.label_alpha(con, run_id, d) for d in q.run_labels(con, run_id)},
                "check": q.check_agreement(con, run_id, evaluation_id, human), "evaluation_id": evaluation_id}


def test_alpha_table_shows_each_label_with_the_store_figures(make_app, annotated: Path) -> None:
    app = make_app(annotated, PAGE, run="clearpath")
    table = app.dataframe[0].value.set_index("label")
    alphas = expected(annotated)["alphas"]
    assert set(table.index) == {"faithfulness", "relevance", "fluency"}
    for level in ("nominal", "ordinal", "interval"):
        assert table.loc["faithfulness", level] == pytest.approx(alphas["faithfulness"]["alpha"][level])
    assert "free text has no agreement statistic" in table.loc["fluency", "note"]


def test_most_disagreed_responses_show_ratings_and_reasons_inert(make_app, annotated: Path, rendered) -> None:  # type: ignore[no-untyped-def]
    app = make_app(annotated, PAGE, run="clearpath")
    texts = rendered(app)
    assert any(t.startswith("faithfulness: ") and "**" in t for t in texts)
    assert any("&lt;script&gt;" in t for t in texts)  # the hostile reason, escaped
    assert not any("<script>" in t or "](javascript" in t or "<b>" in t for t in texts)
    assert links(app, "review")  # each listed response links to Review


def test_confusion_matrix_cells_show_counts_and_link_to_their_responses(make_app, annotated: Path) -> None:
    app = make_app(annotated, PAGE, run="clearpath")
    figures = expected(annotated)
    confusion = figures["check"]["confusion"]
    cells = {parse_qs(link.query_string)["cell"][0]: link for link in links(app, "agreement")
             if "no_hallucination" in parse_qs(link.query_string)["rule"][0]}
    assert {cell: int(link.label.replace(",", "")) for cell, link in cells.items()} == {
        f"{c}:{h}": confusion.cell(c, h) for c in ("PASS", "FAIL") for h in ("PASS", "FAIL")}


def test_a_cell_link_lists_its_responses_with_review_links(make_app, annotated: Path) -> None:
    figures = expected(annotated)
    confusion = figures["check"]["confusion"]
    verdict, person = max(((c, h) for c in ("PASS", "FAIL") for h in ("PASS", "FAIL")),
                          key=lambda cell: confusion.cell(*cell))
    app = make_app(annotated, PAGE, run="clearpath", cell=f"{verdict}:{person}", rule=figures["check"]["rule"],
                   evaluation=figures["evaluation_id"])
    assert any(f"Check {verdict}, humans {person}" in s.value for s in app.subheader)
    review = links(app, "review")
    listed = {parse_qs(link.query_string)["response"][0] for link in review}
    with connect(annotated, read_only=True) as con:
        run_id = q.run_id(con, "clearpath")
        mapped = q.mappings(con, run_id, figures["evaluation_id"], [])
        [human] = [m for m in mapped if m.mapping.label == "faithfulness"]
        total, rows = q.cell_page(con, run_id, figures["evaluation_id"], human, verdict, person, limit=20)
    assert total == confusion.cell(verdict, person) > 0
    assert {str(r["response_id"]) for r in rows} <= listed
    assert all(parse_qs(link.query_string)["evaluation"] == [str(figures["evaluation_id"])] for link in review)


def test_kappa_precision_and_recall_are_shown(make_app, annotated: Path) -> None:
    app = make_app(annotated, PAGE, run="clearpath")
    confusion = expected(annotated)["check"]["confusion"]
    first = {m.label: m.value for m in list(app.metric)[:4]}  # no_hallucination=faithfulness… comes first
    assert first == {"Responses compared": f"{confusion.n:,}", "Cohen's kappa": f"{confusion.kappa():.3f}",
                     "Precision of FAIL": percent(confusion.precision()),
                     "Recall of FAIL": percent(confusion.recall())}


def test_a_bad_typed_mapping_shows_one_error(make_app, annotated: Path) -> None:
    app = make_app(annotated, PAGE, run="clearpath", map="no_hallucination>=3")
    assert [e.value for e in app.error] and "CHECK=LABEL" in app.error[0].value


def test_a_run_without_labels_says_how_to_get_them(make_app, annotated: Path) -> None:
    app = make_app(annotated, PAGE, run="ramayana_v1")
    assert any("no human labels" in i.value for i in app.info)


def test_relevance_is_not_paired_with_answers_question_and_a_typed_pairing_is_cautioned(make_app, annotated: Path
                                                                                          ) -> None:
    app = make_app(annotated, PAGE, run="clearpath")
    assert not any("answers" in s.value for s in app.subheader)  # only faithfulness -> no_hallucination
    assert not any("measure different things" in w.value for w in app.warning)
    app = make_app(annotated, PAGE, run="clearpath", map="answers_question=relevance>=3")
    [warning] = [w.value for w in app.warning if "measure different things" in w.value]
    assert "relevance rates whether the answer is on topic" in warning


def test_a_nearly_constant_label_is_cautioned(make_app, sample_store: Path) -> None:
    from evaluator.review import annotations

    with connect(sample_store) as con:
        run_id = q.run_id(con, "clearpath")
        annotations.define_label(con, run_id, "faithfulness", "ordinal", ["1", "2", "3", "4"])
        ids = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = ?", [run_id]).fetchall()]
        for response_id in ids:
            annotations.add_annotation(con, response_id, "ann", "faithfulness", "4", "", source="imported")
    app = make_app(sample_store, PAGE, run="clearpath")
    [warning] = [w.value for w in app.warning if "nearly constant" in w.value]
    assert f"{len(ids)} of {len(ids)} ratings of faithfulness are “4”" in warning
