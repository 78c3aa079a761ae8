"""Store glue for the dataset-level metrics: judge a run's responses, compute TRUST-SCORE
per provider once over all its responses, store the value with its components and rows."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from evaluator.cli.common import run_id_for
from evaluator.judges import Judge, JudgeVerdict, make_judge
from evaluator.metrics.trust import TrustScore, trust_score
from evaluator.recompute import RUN_ROWS_SQL, response_input
from evaluator.store import atomic, fetch_one
from evaluator.types import ResponseInput

METRIC = "trust_score"


class StoreJudgeCache:
    """Judge replies cached in the store's judge_cache table, so a re-run costs nothing."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None:
        row = fetch_one(self.con, "SELECT reply FROM judge_cache WHERE judge = ? AND model = ? AND prompt_hash = ?",
                        [judge, model, prompt_hash])
        return None if row is None else str(row[0])

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, now())", [judge, model, prompt_hash, reply]
        )


@dataclass(frozen=True)
class ProviderMetrics:
    metric_result_id: int
    provider: str
    score: TrustScore


def _responses_by_provider(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, list[tuple[int, ResponseInput]]]:
    cursor = con.cursor()
    try:
        by_provider: dict[str, list[tuple[int, ResponseInput]]] = defaultdict(list)
        for batch in cursor.sql(RUN_ROWS_SQL, params=[run_id]).to_arrow_reader(20_000):
            for row in batch.to_pylist():
                by_provider[row["provider"]].append((row["response_id"], response_input(row)))
        return dict(by_provider)
    finally:
        cursor.close()


def refused_overrides(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[int, bool]:
    """response_id -> the latest reviewer decision on 'refused'."""
    rows = con.execute(
        """SELECT o.response_id, arg_max(o.new_value, o.override_id)
           FROM overrides o JOIN responses r ON r.response_id = o.response_id
           WHERE r.run_id = ? AND o.target = 'refused' GROUP BY o.response_id""",
        [run_id],
    ).fetchall()
    return {int(rid): str(value).lower() in ("true", "refused", "yes", "1") for rid, value in rows}


def compute_and_store(
    con: duckdb.DuckDBPyConnection,
    run_name: str,
    judge: str = "heuristic",
    with_overrides: bool = False,
    *,
    judge_options: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[ProviderMetrics]:
    """TRUST-SCORE per provider of the run; one metric_results row each (+ per-response rows)."""
    run_id = run_id_for(con, run_name)
    judge_impl: Judge = make_judge(judge, cache=StoreJudgeCache(con), **(judge_options or {}))
    overrides = refused_overrides(con, run_id) if with_overrides else {}
    computed: list[tuple[str, TrustScore, list[int]]] = []
    for provider, items in sorted(_responses_by_provider(con, run_id).items()):
        verdicts: dict[str, JudgeVerdict] = {}
        for response_id, resp in items:
            if response_id not in overrides:  # the reviewer's word stands; no judge call needed
                verdicts[resp.question_id] = judge_impl.judge(resp.question, resp.answer)
            if progress is not None:
                progress(1)
        by_question = {resp.question_id: overrides[rid] for rid, resp in items if rid in overrides}
        score = trust_score([resp for _, resp in items], verdicts, by_question)
        computed.append((provider, score, [rid for rid, _ in items]))
    return _store(con, run_id, judge_impl, with_overrides, computed)


def _store(con: duckdb.DuckDBPyConnection, run_id: int, judge: Judge, with_overrides: bool,
           computed: list[tuple[str, TrustScore, list[int]]]) -> list[ProviderMetrics]:
    stored = []
    judge_name = getattr(judge, "name", "judge")
    with atomic(con):
        for provider, score, response_ids in computed:
            metric_result_id = int(fetch_one(con, "SELECT nextval('metric_result_ids')")[0])  # type: ignore[index]
            con.execute(
                "INSERT INTO metric_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, now())",
                [metric_result_id, run_id, provider, METRIC, judge_name, with_overrides, score.f1gr,
                 orjson.dumps(score.components()).decode()],
            )
            rows = pa.table({
                "response_id": response_ids,
                "refused": [r.refused for r in score.rows],
                "refused_by": [r.refused_by for r in score.rows],
                "answerable": [r.answerable for r in score.rows],
                "ac_q": [float(r.ac_q) for r in score.rows],
            })
            con.register("metric_rows", rows)
            try:
                con.execute("INSERT INTO metric_responses SELECT ?, response_id, refused, refused_by, answerable, "
                            "ac_q FROM metric_rows", [metric_result_id])
            finally:
                con.unregister("metric_rows")
            stored.append(ProviderMetrics(metric_result_id, provider, score))
    return stored


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    return fn(), time.perf_counter() - started
