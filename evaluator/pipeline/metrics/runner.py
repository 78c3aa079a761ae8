"""Store glue for the dataset-level metrics: judge a run's responses, compute TRUST-SCORE
per provider once over all its responses, store the value with its components and rows."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from evaluator.core.types import ResponseInput
from evaluator.pipeline.judges import HeuristicJudge, Judge, JudgeVerdict, make_judge
from evaluator.pipeline.metrics.sql import scores_from_features, stage_features
from evaluator.pipeline.metrics.trust import TrustScore, trust_score
from evaluator.pipeline.responses import RUN_ROWS_SQL, response_input
from evaluator.rules.load import Rules, load_rules
from evaluator.store.db import arrow_reader, atomic, connect, cursor_of, drop_quietly, fetch_one, next_ids
from evaluator.store.run_lookup import run_id_for
from evaluator.store.staging import attached, require_same_run, run_version, snapshot_run, staging_area

METRIC = "trust_score"
ENGINES = ("sql", "python")


CACHE_INSERT_SQL = "INSERT OR REPLACE INTO judge_cache VALUES ($judge, $model, $prompt_hash, $reply, now())"


class StoreJudgeCache:
    """Judge replies cached in a judge_cache table (the staging file's copy of the store's), so a
    re-run costs nothing; replies new in this run are remembered to be written back."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.new: list[dict[str, str]] = []

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None:
        row = fetch_one(self.con, "SELECT reply FROM judge_cache WHERE judge = $judge AND model = $model "
                        "AND prompt_hash = $prompt_hash",
                        {"judge": judge, "model": model, "prompt_hash": prompt_hash})
        return None if row is None else str(row[0])

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None:
        row = {"judge": judge, "model": model, "prompt_hash": prompt_hash, "reply": reply}
        self.con.execute(CACHE_INSERT_SQL, row)
        self.new.append(row)


@dataclass(frozen=True)
class ProviderMetrics:
    metric_result_id: int
    provider: str
    score: TrustScore


def _responses_by_provider(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, list[tuple[int, ResponseInput]]]:
    cursor = cursor_of(con)
    try:
        by_provider: dict[str, list[tuple[int, ResponseInput]]] = defaultdict(list)
        for batch in arrow_reader(cursor.sql(RUN_ROWS_SQL, params={"run": run_id}), 20_000):
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
           WHERE r.run_id = $run AND o.target = 'refused' GROUP BY o.response_id""",
        {"run": run_id},
    ).fetchall()
    return {int(rid): str(value).lower() in ("true", "refused", "yes", "1") for rid, value in rows}


def compute_and_store(
    db: str | os.PathLike[str] | None,
    run_name: str,
    judge: str = "heuristic",
    with_overrides: bool = False,
    *,
    judge_options: dict[str, Any] | None = None,
    progress: Callable[[int], None] | None = None,
    rules: Rules | None = None,
    engine: str = "sql",
) -> list[ProviderMetrics]:
    """TRUST-SCORE per provider of the run; one metric_results row each (+ per-response rows).

    The store is held only to read the run and to append the results: the judging (an LLM
    judge may take minutes) reads the staging file (evaluator.store.staging). ``engine="sql"`` decides
    the heuristic judge in DuckDB (evaluator.pipeline.metrics.sql): its SQL reads the store in the read
    window and stages only the features and the rows Python decides. ``"python"`` is the
    reference path (and the only one for other judges): the whole run is copied out first."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    with staging_area(db) as stage:
        with connect(db, read_only=True, upgrade=True) as con:  # read window (shared with readers)
            run_id = run_id_for(con, run_name)
            version = run_version(con, run_id)
            profile = fetch_one(con, "SELECT profile FROM runs WHERE run_id = $run", {"run": run_id})
            overrides = refused_overrides(con, run_id) if with_overrides else {}
            options = dict(judge_options or {})
            if judge == "heuristic":  # the rules' lists, and the run's profile's own refusal phrases
                options.setdefault("rules", rules)
                run_rules = rules or load_rules()
                if profile is not None and profile[0] in run_rules.profile_names:
                    options.setdefault("profile", profile[0])
            sql_judge = HeuristicJudge.from_rules(**options) if engine == "sql" and judge == "heuristic" else None
            if sql_judge is not None:  # SQL only, on the store: cheaper than copying the run out (issue 16)
                with attached(con, stage) as alias:
                    stage_features(con, alias, run_id, sql_judge)
            else:
                snapshot_run(con, run_id, stage, extra={"judge_cache": (
                    "SELECT * FROM judge_cache WHERE judge = $judge", {"judge": judge})})
        scon = stage.connect()
        try:
            cache = StoreJudgeCache(scon)
            judge_impl: Judge = sql_judge if sql_judge is not None else make_judge(judge, cache=cache, **options)
            if sql_judge is not None:
                scored = scores_from_features(scon, sql_judge, overrides, progress)
                computed: list[tuple[str, TrustScore, list[int]]] = [(p, score, []) for p, score, _ in scored]
                tables = _sql_score_tables(scon, scored)
            else:
                computed = _judge_and_score(scon, run_id, judge_impl, overrides, progress)
                tables = _score_tables(computed)
        finally:
            scon.close()
        with connect(db) as con, atomic(con):  # write window
            require_same_run(con, run_id, version, run_name, "while its metrics were computed")
            if cache.new:
                con.executemany(CACHE_INSERT_SQL, cache.new)
            return _store(con, run_id, judge_impl, with_overrides, computed, tables)


def _judge_and_score(con: duckdb.DuckDBPyConnection, run_id: int, judge_impl: Judge, overrides: dict[int, bool],
                     progress: Callable[[int], None] | None) -> list[tuple[str, TrustScore, list[int]]]:
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
    return computed


def _score_tables(computed: list[tuple[str, TrustScore, list[int]]]) -> tuple[pa.Table, pa.Table]:
    """The scores (one row per provider, by its position) and the per-response rows, as Arrow
    tables built before the store is opened for writing."""
    results = pa.table({
        "position": pa.array(range(len(computed)), pa.int64()),
        "provider": [provider for provider, _, _ in computed],
        "value": pa.array([score.f1gr for _, score, _ in computed], pa.float64()),
        "components": [orjson.dumps(score.components()).decode() for _, score, _ in computed],
    })
    rows = pa.table({
        "position": pa.array([i for i, (_, _, rids) in enumerate(computed) for _ in rids], pa.int64()),
        "response_id": pa.array([rid for _, _, rids in computed for rid in rids], pa.int64()),
        "refused": pa.array([r.refused for _, score, _ in computed for r in score.rows], pa.bool_()),
        "refused_by": pa.array([r.refused_by for _, score, _ in computed for r in score.rows], pa.string()),
        "answerable": pa.array([r.answerable for _, score, _ in computed for r in score.rows], pa.bool_()),
        "ac_q": pa.array([float(r.ac_q) for _, score, _ in computed for r in score.rows], pa.float64()),
    })
    return results, rows


def _sql_score_tables(con: duckdb.DuckDBPyConnection,
                      in_sql: list[tuple[str, TrustScore, pa.Table]]) -> tuple[pa.Table, pa.Table]:
    """As ``_score_tables``, from the SQL engine's per-provider Arrow rows (each with its
    provider's ``position`` in ``in_sql``), built by DuckDB (``con``: any connection): Arrow
    built from Python objects imports pandas, half a second of a run's metrics."""
    results = con.sql(
        "SELECT unnest(range(len($provider)))::BIGINT AS position, unnest($provider)::VARCHAR AS provider, "
        "unnest($value)::DOUBLE AS value, unnest($components)::VARCHAR AS components",
        params={"provider": [provider for provider, _, _ in in_sql],
                "value": [score.f1gr for _, score, _ in in_sql],
                "components": [orjson.dumps(score.components()).decode() for _, score, _ in in_sql]}).to_arrow_table()
    schema = pa.schema([("position", pa.int64()), ("response_id", pa.int64()), ("refused", pa.bool_()),
                        ("refused_by", pa.string()), ("answerable", pa.bool_()), ("ac_q", pa.float64())])
    parts = [rows.select(schema.names).cast(schema) for _, _, rows in in_sql]
    return results, pa.concat_tables(parts) if parts else schema.empty_table()


def _store(con: duckdb.DuckDBPyConnection, run_id: int, judge: Judge, with_overrides: bool,
           computed: list[tuple[str, TrustScore, list[int]]], tables: tuple[pa.Table, pa.Table]
           ) -> list[ProviderMetrics]:
    """Write the scores set-wise, whatever the number of providers (callers hold the transaction)."""
    judge_name = getattr(judge, "name", "judge")
    ids = next_ids(con, "metric_result_ids", len(computed))
    con.register("metric_scores", tables[0])
    con.register("metric_rows", tables[1])
    con.execute("CREATE OR REPLACE TEMP TABLE metric_ids AS SELECT unnest(range(len($ids)))::BIGINT AS position, "
                "unnest($ids)::BIGINT AS metric_result_id", {"ids": ids})
    try:
        con.execute("""INSERT INTO metric_results
                       SELECT i.metric_result_id, $run, s.provider, $metric, $judge, $with_overrides, s.value,
                              s.components::JSON, now()
                       FROM metric_scores s JOIN metric_ids i USING (position)""",
                    {"run": run_id, "metric": METRIC, "judge": judge_name, "with_overrides": with_overrides})
        con.execute("""INSERT INTO metric_responses
                       SELECT i.metric_result_id, r.response_id, r.refused, r.refused_by, r.answerable, r.ac_q
                       FROM metric_rows r JOIN metric_ids i USING (position)""")
    finally:
        drop_quietly(con, views=("metric_scores", "metric_rows"), temp_tables=("metric_ids",))
    return [ProviderMetrics(i, provider, score) for i, (provider, score, _) in zip(ids, computed, strict=True)]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    return fn(), time.perf_counter() - started
