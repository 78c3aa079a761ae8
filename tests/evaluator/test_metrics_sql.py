"""The SQL engine of `evaluator metrics` (heuristic judge) against the Python reference path:
the same per-response decisions and the same metric values, on the sample runs and on
adversarial answers."""

from __future__ import annotations

import shutil

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator.ingest import ingest_file
from evaluator.metrics.runner import compute_and_store
from evaluator.store import connect

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
