"""evaluator.recompute: the process-pool path stores exactly what the in-process path does."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator import recompute as rc
from evaluator.ingest import ingest_file
from evaluator.store import connect, fetch_value

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(db_path: Path) -> Path:
    with connect(db_path) as con:
        ingest_file(con, ROOT / "data" / "ramayana_v2.jsonl", name="v2")
        ingest_file(con, ROOT / "data" / "clearpath_support.jsonl", name="clearpath")
    return db_path


def _stored(con, evaluation_id: int) -> tuple[list, list, list]:  # type: ignore[no-untyped-def]
    return (
        con.execute("SELECT response_id, check_name, verdict, reason, spans::VARCHAR FROM check_results "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
        con.execute("SELECT response_id, flag, severity, spans::VARCHAR FROM flags "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
        con.execute("SELECT response_id, overall, is_t3, template_group FROM response_results "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
    )


@pytest.mark.parametrize("run", ["v2", "clearpath"])
@pytest.mark.parametrize("with_spans", [True, False])
def test_a_process_pool_stores_the_same_evaluation(store, monkeypatch, run, with_spans):
    monkeypatch.setattr(rc, "BATCH_ROWS", 7)  # several batches, so several questions span batches
    alone = rc.recompute(store, run, "t3_aware", with_spans=with_spans, workers=1)
    pooled = rc.recompute(store, run, "t3_aware", with_spans=with_spans, workers=2)
    with connect(store) as con:
        assert alone.n_responses == pooled.n_responses > 0
        first, second = _stored(con, alone.evaluation_id), _stored(con, pooled.evaluation_id)
    assert first == second
    assert len(first[0]) == 6 * alone.n_responses


def test_batch_rows_with_the_runs_questions_equal_the_rows_read_by_id(store):
    with connect(store) as con:
        run_id = fetch_value(con, "SELECT run_id FROM runs WHERE name = 'v2'")
        questions = rc._question_columns(con.sql(rc.RUN_QUESTIONS_SQL, params=[run_id]).to_arrow_table())
        batched: dict = {}
        for batch in rc._flat_batches(con, run_id):
            ids, inputs = rc._batch_inputs(batch, questions)
            batched.update(zip(ids, inputs, strict=True))
        by_id = rc.load_responses(con, list(batched))
    assert batched == by_id
    assert any(item.gold_answers for item in by_id.values()) and any(item.retrieved for item in by_id.values())
