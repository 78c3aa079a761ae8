"""The SQL engine of `evaluator metrics` (heuristic judge) against the Python reference path:
the same per-response decisions and the same metric values, on the sample runs and on
adversarial answers."""

from __future__ import annotations

import shutil

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator.ingest.loader import ingest_file
from evaluator.pipeline.metrics.runner import compute_and_store
from evaluator.store.db import connect

RUNS = ("ramayana", "ramayana_v2", "clearpath")


def _stored(db, ids: list[int]) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT response_id, refused, refused_by, answerable, ac_q FROM metric_responses "
                           "WHERE metric_result_id IN (SELECT unnest($ids)) ORDER BY response_id",
                           {"ids": ids}).fetchall()


def _both(db, run: str, **kwargs) -> tuple[list, list]:
    return (compute_and_store(db, run, engine="python", **kwargs), compute_and_store(db, run, engine="sql", **kwargs))


@pytest.mark.parametrize("run", RUNS)
def test_sql_engine_gives_the_python_scores_on_the_sample_runs(sample_store, run):
    python, sql = _both(sample_store, run)
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]


@pytest.mark.parametrize("run", RUNS)
def test_sql_engine_stores_the_python_per_response_rows(sample_store, run):
    python, sql = _both(sample_store, run)
    assert _stored(sample_store, [m.metric_result_id for m in sql]) == \
        _stored(sample_store, [m.metric_result_id for m in python])


ADVERSARIAL = st.one_of(
    st.sampled_from(["", "   ", "\t\n", "I apologize, but I couldn\u2019t find an answer",
                     "I apologise but I couldnt find answer", "I\u2019m sorry", "The answer is Rama.",
                     "Rama\u0301 went", "\u00a0", "K\u212a", "caf\u00e9 the Rama",
                     "I apologize but I could not find an answer to that", "Sita, Rama; and Lakshmana!"]),
    st.text(alphabet=st.sampled_from(list("Iapologize, but couldn't find an answer Rama Sita.\u2019\u0301\u00e9\t\n")),
            max_size=60),
    st.text(max_size=40),
)


def _toy_jsonl(path, answers: list[str]) -> None:
    import json

    with open(path, "w", encoding="utf-8") as f:
        for i, answer in enumerate(answers):
            f.write(json.dumps({
                "question_id": f"q{i}", "question": "Who went?", "provider": "p", "answer": answer,
                "template": "T1" if i % 3 else "T3", "expected_template": "T1",
                "gold_answers": [["Rama"], {"aliases": ["Sita", "the"], "supported": None}],
                "retrieved": [{"id": f"c{i}", "text": "Rama and Sita went" if i % 2 else "nobody", "score": 1.0}],
            }) + "\n")


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answers=st.lists(ADVERSARIAL, min_size=1, max_size=8))
def test_sql_engine_equals_python_on_adversarial_answers(tmp_path_factory, answers):
    tmp = tmp_path_factory.mktemp("adv")
    _toy_jsonl(tmp / "run.jsonl", answers)
    db = tmp / "s.duckdb"
    with connect(db) as con:
        ingest_file(con, tmp / "run.jsonl", name="adv")
    python, sql = _both(db, "adv")
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]
    assert _stored(db, [m.metric_result_id for m in sql]) == _stored(db, [m.metric_result_id for m in python])
    shutil.rmtree(tmp)


def _response_ids(db, run: str) -> list[int]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [rid for (rid,) in con.execute("SELECT response_id FROM responses JOIN runs USING (run_id) "
                                              "WHERE runs.name = $run ORDER BY response_id", {"run": run}).fetchall()]


def test_sql_engine_equals_python_with_reviewer_overrides(tmp_path):
    db = _toy_store(tmp_path, ["The answer is Rama.", "I cannot say, but Rama and Sita went.", "I cannot say.",
                               "Rama and Sita went.", "caf\u00e9: Rama and Sita", "I apologise but I cant find answer"])
    judged = compute_and_store(db, "toy", engine="python")
    refused = {rid: by_judge for rid, by_judge, *_ in _stored(db, [m.metric_result_id for m in judged])}
    with duckdb.connect(str(db)) as con:  # a reviewer overrules the judge on every other response
        for rid in sorted(refused)[1::2]:
            con.execute("INSERT INTO overrides VALUES (nextval('override_ids'), $rid, NULL, 'refused', NULL, $new, "
                        "'review', 'alice', now(), NULL, NULL)", {"rid": rid, "new": str(not refused[rid]).lower()})
    python, sql = _both(db, "toy", with_overrides=True)
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]
    assert _stored(db, [m.metric_result_id for m in sql]) == _stored(db, [m.metric_result_id for m in python])


FUZZY_ANSWERS = ["I apologise but I cant find answer", "I apologise -- but ... I cant find the answer, sorry",
                 "Sorry, I can't find it", "i APOLOGIZE but (I) couldnt find any answer", "Rama went. But I find",
                 "an answer but I find an answer", "I  apologize\tbut\nI couldn't find an answer",
                 "The answer is Rama, but I find Sita too.", ""]


def _toy_store(tmp_path, answers: list[str]):
    _toy_jsonl(tmp_path / "run.jsonl", answers)
    db = tmp_path / "s.duckdb"
    with connect(db) as con:
        ingest_file(con, tmp_path / "run.jsonl", name="toy")
    return db


@pytest.mark.parametrize("options", [{"fuzzy_threshold": 0.5}, {"fuzzy_threshold": 0.9},
                                     {"fuzzy_flags": ["Sorry -- I can't find it", "No idea"]}])
def test_sql_engine_equals_python_with_other_fuzzy_flags(tmp_path, options):
    db = _toy_store(tmp_path, FUZZY_ANSWERS)
    python, sql = _both(db, "toy", judge_options=options)
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]
    assert _stored(db, [m.metric_result_id for m in sql]) == _stored(db, [m.metric_result_id for m in python])


def test_sql_engine_equals_python_when_a_pattern_only_python_can_run(tmp_path):
    import re

    db = _toy_store(tmp_path, FUZZY_ANSWERS + ["Nothing (?=) here", "nothing", "The answer is nothing else"])
    options = {"abstention_patterns": [re.compile(r"\bnothing(?= else)", re.IGNORECASE)]}  # lookahead: not RE2
    python, sql = _both(db, "toy", judge_options=options)
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]
    assert _stored(db, [m.metric_result_id for m in sql]) == _stored(db, [m.metric_result_id for m in python])


def test_stage_features_copies_only_the_rows_python_decides(tmp_path):
    from evaluator.pipeline.judges.heuristic import HeuristicJudge
    from evaluator.pipeline.metrics.sql import stage_features
    from evaluator.store.run_lookup import run_id_for
    from evaluator.store.staging import attached, staging_area

    db = _toy_store(tmp_path, ["The answer is Rama.", "caf\u00e9 Rama", "I apologise but I cant find answer",
                               "I cannot help"])
    ids = _response_ids(db, "toy")
    with staging_area(db) as stage:
        with connect(db, read_only=True) as con, attached(con, stage) as alias:
            stage_features(con, alias, run_id_for(con, "toy"), HeuristicJudge.from_rules())
        with duckdb.connect(str(stage.path), read_only=True) as scon:
            staged = [rid for (rid,) in scon.execute("SELECT response_id FROM responses ORDER BY 1").fetchall()]
            features = scon.execute("SELECT count(*) FROM metric_features").fetchall()[0][0]
    assert (staged, features) == ([ids[1], ids[2]], 4)  # non-ASCII text, and the fuzzy flag's candidate


def test_sql_engine_equals_python_when_the_fuzzy_prefilter_is_too_big_for_re2(tmp_path):
    db = _toy_store(tmp_path, FUZZY_ANSWERS)
    long_flag = " ".join(["sorry"] * 2_002)  # a window of 1,003 words: RE2 counts to 1,000 at most
    python, sql = _both(db, "toy", judge_options={"fuzzy_flags": [long_flag, "I cant find"]})
    assert [(m.provider, m.score.components()) for m in sql] == [(m.provider, m.score.components()) for m in python]
    assert _stored(db, [m.metric_result_id for m in sql]) == _stored(db, [m.metric_result_id for m in python])
