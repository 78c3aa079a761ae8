"""Unknown retrieval is not empty retrieval (issue 28).

A run whose file records no retrieval at all (promptfoo, Inspect: responses.retrieval_recorded
FALSE) has no retrieved items because none were recorded, not because nothing was retrieved: the
checks and flags registered with ``needs_retrieval`` are N/A ("the run records no retrieval") and
not raised there, in the Python reference and in the SQL engine alike. An explicit empty list
(retrieval_recorded TRUE, or NULL in rows stored before the column existed) still means "nothing
was retrieved"."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluator.core.registry import NO_RETRIEVAL_REASON
from evaluator.core.types import FAIL, NA, PASS, ResponseEvaluation, ResponseInput
from evaluator.ingest.loader import ingest_file
from evaluator.pipeline.recompute import recompute
from evaluator.pipeline.responses import load_responses
from evaluator.pipeline.sql.engine import evaluate_run_sql, verify
from evaluator.queries import review
from evaluator.review import spans as span_view
from evaluator.rules.load import DEFAULT_RULES_PATH, load_rules, rules_from_text
from evaluator.store.db import connect, fetch_value

Run = Callable[..., ResponseEvaluation]
Make = Callable[..., ResponseInput]
RULES = load_rules()

# Cites a shloka, names a proper noun and a price, none of them in anything retrieved: with an
# empty retrieval it fails retrieval_check and no_hallucination and raises both retrieval flags.
ANSWER = "Lord Rama paid $12/month to Queen Kausalya [Bala-Kanda 18.10]."
NEEDING_CHECKS = ("retrieval_check", "no_hallucination")
NEEDING_FLAGS = ("no_context_warning", "potential_hallucination")


def _unknown(make_resp: Make, answer: str = ANSWER, **fields: object) -> ResponseInput:
    return make_resp(answer, template="T1", expected_template="T1", retrieval_recorded=False, **fields)


# --- the Python reference --------------------------------------------------------------------------


def test_retrieval_check_is_na_when_the_run_records_no_retrieval(run: Run, make_resp: Make) -> None:
    result = run(_unknown(make_resp)).check("retrieval_check")
    assert (result.verdict, result.reason, result.spans) == (NA, "the run records no retrieval", ())


def test_no_hallucination_is_na_when_the_run_records_no_retrieval(run: Run, make_resp: Make) -> None:
    result = run(_unknown(make_resp)).check("no_hallucination")
    assert (result.verdict, result.reason, result.spans) == (NA, "the run records no retrieval", ())


def test_no_retrieval_flag_is_raised_when_the_run_records_no_retrieval(run: Run, make_resp: Make) -> None:
    assert set(run(_unknown(make_resp)).flag_names()).isdisjoint(NEEDING_FLAGS)


def test_a_flag_that_needs_no_retrieval_is_still_raised_without_recorded_retrieval(run: Run, make_resp: Make
                                                                                  ) -> None:
    assert run(_unknown(make_resp, "I cannot answer that.")).flag_names() == ("refusal_detected",)


def test_an_explicit_empty_retrieval_still_fails_retrieval_check(run: Run, make_resp: Make) -> None:
    resp = make_resp(ANSWER, template="T1", expected_template="T1", retrieved=(), retrieval_recorded=True)
    result = run(resp).check("retrieval_check")
    assert (result.verdict, result.reason) == (FAIL, "nothing was retrieved")


def test_an_explicit_empty_retrieval_still_fails_no_hallucination(run: Run, make_resp: Make) -> None:
    resp = make_resp(ANSWER, template="T1", expected_template="T1", retrieved=(), retrieval_recorded=True)
    result = run(resp).check("no_hallucination")
    assert (result.verdict, result.reason) == (FAIL, "cites 'Bala-Kanda 18.10', which is not among the retrieved "
                                                     "shlokas")


def test_an_explicit_empty_retrieval_still_raises_both_retrieval_flags(run: Run, make_resp: Make) -> None:
    resp = make_resp(ANSWER, template="T1", expected_template="T1", retrieved=(), retrieval_recorded=True)
    assert run(resp).flag_names() == NEEDING_FLAGS


def test_the_other_checks_are_decided_as_with_recorded_retrieval(run: Run, make_resp: Make) -> None:
    unknown = run(_unknown(make_resp))
    recorded = run(make_resp(ANSWER, template="T1", expected_template="T1"))
    others = [c for c in recorded.checks if c.check not in NEEDING_CHECKS]
    assert [c for c in unknown.checks if c.check not in NEEDING_CHECKS] == others
    assert len(others) == 4


def test_overall_passes_when_every_check_not_na_passes(run: Run, make_resp: Make) -> None:
    # with an empty retrieval this answer fails only the two checks that need the retrieved items
    answer = "Dasharatha was the father of Rama [Bala-Kanda 18.10]."
    empty = run(make_resp(answer, template="T1", expected_template="T1", gold_answers=["Dasharatha"]))
    assert {c.check for c in empty.checks if c.verdict == FAIL} == set(NEEDING_CHECKS)
    unknown = run(_unknown(make_resp, answer, gold_answers=["Dasharatha"]))
    assert {c.check: c.verdict for c in unknown.checks} == {
        "routing_check": PASS, "retrieval_check": NA, "answers_question": PASS, "cites_shlokas": PASS,
        "follows_template": PASS, "no_hallucination": NA}
    assert unknown.overall == PASS


def test_overall_fails_when_a_check_that_needs_no_retrieval_fails(run: Run, make_resp: Make) -> None:
    result = run(_unknown(make_resp, "Dasharatha was the father of Rama.", gold_answers=["Dasharatha"]))
    assert result.check("cites_shlokas").verdict == FAIL
    assert result.overall == FAIL


def test_a_check_the_profile_does_not_apply_keeps_the_profiles_reason(make_resp: Make) -> None:
    from evaluator.core.evaluate import evaluate

    rules = _rag_without_retrieval_check()
    result = evaluate(_unknown(make_resp), ruleset="t3_aware", rules=rules, profile="rag").check("retrieval_check")
    assert (result.verdict, result.reason) == (NA, rules.profile("rag").not_applicable_reason)


def _rag_without_retrieval_check():  # type: ignore[no-untyped-def]
    text = DEFAULT_RULES_PATH.read_text(encoding="utf-8")
    old = 'checks = ["retrieval_check", "answers_question", "cites_shlokas", "no_hallucination"]'
    assert old in text
    return rules_from_text(text.replace(old, 'checks = ["answers_question", "cites_shlokas", "no_hallucination"]'),
                           "edited.toml")


# --- stored runs: both engines, and what reads the store -----------------------------------------

ROWS = [  # (answer, retrieved) of a small run; every row's retrieved list is recorded in the file
    (ANSWER, []),
    ("Dasharatha was the father of Rama [Bala-Kanda 18.10].",
     [{"id": "Bala-Kanda 18.10", "text": "Rama, the son of King Dasharatha", "score": 0.9}]),
    ("Lord Rama went to Lanka [Ayodhya-Kanda 1.7].",
     [{"id": "Sundara-Kanda 3.4", "text": "about forests", "score": 0.1}]),
    ("I cannot answer that.", []),
]


def _store(folder: Path, unknown: set[int], null: set[int] = frozenset()) -> tuple[Path, int]:  # type: ignore[assignment]
    """ROWS ingested as run 'toy' (question ids q0, q1, ...); rows ``unknown`` then set to
    retrieval_recorded = false, rows ``null`` to NULL (as in a store made before the column)."""
    path = folder / "toy.jsonl"
    path.write_text("".join(json.dumps({"question_id": f"q{i}", "question": "Who?", "provider": "p",
                                        "answer": answer, "template": "T1", "expected_template": "T1",
                                        "retrieved": retrieved}) + "\n"
                            for i, (answer, retrieved) in enumerate(ROWS)), encoding="utf-8")
    db = folder / "toy.duckdb"
    with connect(db) as con:
        ingest_file(con, path, name="toy")
        for rows, value in ((unknown, False), (null, None)):
            con.execute("UPDATE responses SET retrieval_recorded = $v WHERE list_contains($q, question_id)",
                        {"v": value, "q": [f"q{i}" for i in rows]})
        return db, int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'toy'"))


def _ids_by_question(con) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return dict(con.execute("SELECT question_id, response_id FROM responses").fetchall())


def test_stored_responses_read_whether_their_run_records_retrieval(tmp_path: Path) -> None:
    db, _ = _store(tmp_path, unknown={0, 2}, null={1})
    with connect(db) as con:
        ids = _ids_by_question(con)
        loaded = load_responses(con, list(ids.values()))
    assert {q: loaded[rid].retrieval_recorded for q, rid in ids.items()} == {
        "q0": False, "q1": True, "q2": False, "q3": True}


def test_a_run_read_whole_reads_whether_it_records_retrieval(tmp_path: Path) -> None:
    # RUN_ROWS_SQL and response_input: how the metrics read a run
    from evaluator.pipeline.responses import RUN_ROWS_SQL, response_input

    db, run_id = _store(tmp_path, unknown={0, 2}, null={1})
    with connect(db) as con:
        rows = con.sql(RUN_ROWS_SQL, params={"run": run_id}).to_arrow_table().to_pylist()
    assert {row["question_id"]: response_input(row).retrieval_recorded for row in rows} == {
        "q0": False, "q1": True, "q2": False, "q3": True}


def _stored(con, evaluation_id: int):  # type: ignore[no-untyped-def]
    checks = con.execute("SELECT response_id, check_name, verdict, reason FROM check_results "
                         "WHERE evaluation_id = $e ORDER BY ALL", {"e": evaluation_id}).fetchall()
    flags = con.execute("SELECT response_id, flag, severity FROM flags WHERE evaluation_id = $e ORDER BY ALL",
                        {"e": evaluation_id}).fetchall()
    overall = con.execute("SELECT response_id, overall FROM response_results WHERE evaluation_id = $e ORDER BY ALL",
                          {"e": evaluation_id}).fetchall()
    return checks, flags, overall


def test_recompute_stores_the_same_rows_with_the_python_and_the_sql_engine(sample_store: Path) -> None:
    # the sample run, half its responses (claude's) from a file that records no retrieval, a few
    # others stored before the column (NULL)
    with connect(sample_store) as con:
        con.execute("UPDATE responses SET retrieval_recorded = false WHERE provider = 'claude' AND run_id = "
                    "(SELECT run_id FROM runs WHERE name = 'ramayana_v2')")
        con.execute("UPDATE responses SET retrieval_recorded = NULL WHERE provider = 'openai' AND question_id < 'q05' "
                    "AND run_id = (SELECT run_id FROM runs WHERE name = 'ramayana_v2')")
    python = recompute(sample_store, "ramayana_v2", "t3_aware", engine="python", workers=1).evaluation_id
    sql = recompute(sample_store, "ramayana_v2", "t3_aware", engine="sql").evaluation_id
    with connect(sample_store) as con:
        assert _stored(con, python) == _stored(con, sql)
        unknown = {r[0] for r in con.execute("SELECT response_id FROM responses WHERE retrieval_recorded = false"
                                             ).fetchall()}
        checks, flags, _ = _stored(con, sql)
    assert len(unknown) == 40
    assert {(rid, name) for rid, name, verdict, reason in checks
            if (verdict, reason) == (NA, NO_RETRIEVAL_REASON)} == {(rid, n) for rid in unknown for n in NEEDING_CHECKS}
    assert not any(rid in unknown and flag in NEEDING_FLAGS for rid, flag, _ in flags)


def test_the_sql_engine_decides_unknown_retrieval_in_sql(tmp_path: Path) -> None:
    db, run_id = _store(tmp_path, unknown={0, 1, 2, 3})
    with connect(db) as con:
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana")
        assert (run.n_sql, run.n_python) == (4, 0)
        assert verify(con, run, 10**9, ruleset="t3_aware", rules=RULES, profile="ramayana") == 4
    assert run.flags.column("flag").to_pylist() == ["refusal_detected"]


def test_an_explicit_empty_retrieval_in_a_stored_run_still_fails_and_warns(tmp_path: Path) -> None:
    db, run_id = _store(tmp_path, unknown={1, 2}, null={3})  # q0 (TRUE) and q3 (NULL) retrieved nothing
    with connect(db) as con:
        ids = _ids_by_question(con)
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana")
        verify(con, run, 10**9, ruleset="t3_aware", rules=RULES, profile="ramayana")
    retrieval = {rid: (v, r) for rid, name, v, r in zip(*(run.checks.column(k).to_pylist() for k in
                                                          ("response_id", "check_name", "verdict", "reason")),
                                                        strict=True) if name == "retrieval_check"}
    warned = {rid for rid, flag in zip(run.flags.column("response_id").to_pylist(),
                                       run.flags.column("flag").to_pylist(), strict=True)
              if flag == "no_context_warning"}
    assert retrieval == {ids["q0"]: (FAIL, "nothing was retrieved"), ids["q1"]: (NA, NO_RETRIEVAL_REASON),
                         ids["q2"]: (NA, NO_RETRIEVAL_REASON), ids["q3"]: (FAIL, "nothing was retrieved")}
    assert warned == {ids["q0"], ids["q3"]}


def test_a_check_the_profile_does_not_apply_keeps_the_profiles_reason_in_sql(tmp_path: Path) -> None:
    rules = _rag_without_retrieval_check()
    db, run_id = _store(tmp_path, unknown={0, 1, 2, 3})
    with connect(db) as con:
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=rules, profile="rag")
        verify(con, run, 10**9, ruleset="t3_aware", rules=rules, profile="rag")
    reasons = {(name, r) for name, r in zip(run.checks.column("check_name").to_pylist(),
                                            run.checks.column("reason").to_pylist(), strict=True)
               if name in NEEDING_CHECKS}
    assert reasons == {("retrieval_check", rules.profile("rag").not_applicable_reason),
                       ("no_hallucination", NO_RETRIEVAL_REASON)}


HALLUCINATION_SPANS = {"unverified_price", "proper_noun", "citation_not_retrieved"}


def test_review_computes_no_retrieval_spans_for_a_run_that_records_no_retrieval(tmp_path: Path) -> None:
    # a verdicts-only evaluation: the Review page evaluates again for its highlights
    db, _ = _store(tmp_path, unknown=set())
    recorded = recompute(db, "toy", "t3_aware", engine="sql").evaluation_id
    with connect(db) as con:
        ids = _ids_by_question(con)
        before = span_view.of(con, recorded, [ids["q0"]])[ids["q0"]]
        con.execute("UPDATE responses SET retrieval_recorded = false")
    assert {s["kind"] for s in before} >= HALLUCINATION_SPANS
    unknown = recompute(db, "toy", "t3_aware", engine="sql").evaluation_id
    with connect(db) as con:
        after = span_view.of(con, unknown, [ids["q0"]])[ids["q0"]]
        assert review.response(con, ids["q0"])["retrieval_recorded"] is False
    assert not HALLUCINATION_SPANS & {s["kind"] for s in after}


@pytest.mark.parametrize("value", [True, None])
def test_review_reads_a_recorded_or_older_response_as_recorded(tmp_path: Path, value: bool | None) -> None:
    db, _ = _store(tmp_path, unknown=set(), null={0} if value is None else set())
    with connect(db) as con:
        ids = _ids_by_question(con)
        assert fetch_value(con, "SELECT retrieval_recorded FROM responses WHERE response_id = $r",
                           {"r": ids["q0"]}) is value
        assert review.response(con, ids["q0"])["retrieval_recorded"] is True
