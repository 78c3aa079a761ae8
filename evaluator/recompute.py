"""Recompute a stored run under a rule set and store the evaluation (store glue, no rules here).

Set-based at the edges: DuckDB streams the run out as Arrow batches and takes the results
back as Arrow tables; the pure evaluator runs in between, in a process pool on big runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from evaluator.evaluate import evaluate, evaluate_batch
from evaluator.rules import Rules, load_rules, rules_from_text
from evaluator.store import atomic, fetch_one, next_id
from evaluator.types import GoldClaim, ResponseEvaluation, ResponseInput, RetrievedItem, Span

BATCH_ROWS = 20_000
PARALLEL_FROM = 50_000  # below this, a process pool costs more than it saves
SPANS_UP_TO = 100_000  # store highlight spans for runs up to this size; bigger runs compute them on display

RUN_ROWS_SQL = """
SELECT r.response_id, r.question_id, q.question, r.provider, r.answer, r.template, q.expected_template,
       q.expected_routing, r.classification, r.answerable, q.gold_answers, q.expected_ids,
       (SELECT list({'id': c.chunk_id, 'text': c.text, 'score': rt.score} ORDER BY rt.rank)
          FROM retrieved rt JOIN chunks c ON c.chunk_key = rt.chunk_key
         WHERE rt.response_id = r.response_id) AS retrieved
FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
WHERE r.run_id = ?
ORDER BY r.response_id
"""
RESPONSE_ROW_SQL = RUN_ROWS_SQL.replace("WHERE r.run_id = ?", "WHERE r.response_id = ?")


@dataclass(frozen=True)
class RecomputeResult:
    evaluation_id: int
    run: str
    ruleset: str
    rules_hash: str
    n_responses: int
    duration_s: float


def response_input(row: dict[str, Any]) -> ResponseInput:
    """A stored response (as read by RUN_ROWS_SQL) as the pure evaluator's input."""
    gold = orjson.loads(row["gold_answers"]) if row["gold_answers"] else []
    expected_ids = orjson.loads(row["expected_ids"]) if row["expected_ids"] else []
    return ResponseInput(
        question_id=row["question_id"],
        question=row["question"],
        provider=row["provider"],
        answer=row["answer"],
        template=row["template"],
        expected_template=row["expected_template"],
        expected_routing=row["expected_routing"],
        classification=row["classification"],
        retrieved=tuple(RetrievedItem(i["id"], i["text"], i["score"]) for i in row["retrieved"] or ()),
        gold_answers=tuple(GoldClaim(tuple(c["aliases"]), c.get("supported")) for c in gold),
        answerable=row["answerable"],
        expected_ids=tuple(expected_ids),
    )


def load_response(con: duckdb.DuckDBPyConnection, response_id: int) -> ResponseInput | None:
    cursor = con.execute(RESPONSE_ROW_SQL, [response_id])
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    return response_input(dict(zip(columns, rows[0], strict=True))) if rows else None


def spans_json(spans: Sequence[Span]) -> str:
    return orjson.dumps([{"start": s.start, "end": s.end, "text": s.text, "kind": s.kind} for s in spans]).decode()


# --- worker side (top-level so the process pool can pickle it) ---------------------------

_WORKER: dict[str, Any] = {}


def _init_worker(rules_text: str, rules_source: str, ruleset: str, profile: str, with_spans: bool) -> None:
    _WORKER.update(
        rules=rules_from_text(rules_text, rules_source), ruleset=ruleset, profile=profile, with_spans=with_spans
    )


def _evaluate_rows(rows: list[dict[str, Any]]) -> list[tuple[int, ResponseEvaluation]]:
    inputs = [response_input(row) for row in rows]
    rules: Rules = _WORKER["rules"]
    if _WORKER["with_spans"]:
        results = [
            evaluate(resp, ruleset=_WORKER["ruleset"], rules=rules, profile=_WORKER["profile"], with_spans=True)
            for resp in inputs
        ]
    else:
        results = evaluate_batch(inputs, ruleset=_WORKER["ruleset"], rules=rules, profile=_WORKER["profile"])
    return [(row["response_id"], result) for row, result in zip(rows, results, strict=True)]


# --- store side ------------------------------------------------------------------------------


def _row_batches(con: duckdb.DuckDBPyConnection, run_id: int) -> Iterator[list[dict[str, Any]]]:
    # A cursor of its own: results are written on `con` while this one is still being read.
    cursor = con.cursor()
    try:
        reader = cursor.sql(RUN_ROWS_SQL, params=[run_id]).to_arrow_reader(BATCH_ROWS)
        for batch in reader:
            yield batch.to_pylist()
    finally:
        cursor.close()


class _ResultColumns:
    def __init__(self) -> None:
        self.checks: dict[str, list[Any]] = {k: [] for k in ("response_id", "check_name", "verdict", "reason", "spans")}
        self.flags: dict[str, list[Any]] = {k: [] for k in ("response_id", "flag", "severity", "spans")}
        self.overall: dict[str, list[Any]] = {k: [] for k in ("response_id", "overall")}

    def add(self, response_id: int, result: ResponseEvaluation) -> None:
        checks = self.checks
        for check in result.checks:
            checks["response_id"].append(response_id)
            checks["check_name"].append(check.check)
            checks["verdict"].append(check.verdict)
            checks["reason"].append(check.reason)
            checks["spans"].append(spans_json(check.spans) if check.spans else "[]")
        for flag in result.flags:
            self.flags["response_id"].append(response_id)
            self.flags["flag"].append(flag.flag)
            self.flags["severity"].append(flag.severity)
            self.flags["spans"].append(spans_json(flag.spans) if flag.spans else "[]")
        self.overall["response_id"].append(response_id)
        self.overall["overall"].append(result.overall)

    def flush(self, con: duckdb.DuckDBPyConnection, evaluation_id: int) -> None:
        tables = {
            "check_results": (self.checks, "SELECT ?, response_id, check_name, verdict, reason, spans::JSON FROM t"),
            "flags": (self.flags, "SELECT ?, response_id, flag, severity, spans::JSON FROM t"),
        }
        for table, (columns, select) in tables.items():
            if not columns["response_id"]:
                continue
            con.register("t", pa.table(columns))
            try:
                con.execute(f"INSERT INTO {table} {select}", [evaluation_id])
            finally:
                con.unregister("t")
        self.__init__()  # type: ignore[misc]


def recompute(
    con: duckdb.DuckDBPyConnection,
    run_name: str,
    ruleset: str,
    *,
    rules: Rules | None = None,
    with_spans: bool | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> RecomputeResult:
    """Evaluate every response of a run; store the evaluation in one transaction."""
    from evaluator.cli.common import run_id_for

    rules = rules or load_rules()
    run_id = run_id_for(con, run_name)
    row = fetch_one(con, "SELECT profile, n_responses FROM runs WHERE run_id = ?", [run_id])
    assert row is not None
    profile, n = str(row[0]), int(row[1])
    if with_spans is None:
        with_spans = n <= SPANS_UP_TO
    workers = workers if workers is not None else (min(os.cpu_count() or 1, 4) if n >= PARALLEL_FROM else 1)
    started = time.perf_counter()
    bar = _progress_bar(progress, n, run_name, ruleset)
    with atomic(con):
        evaluation_id = next_id(con, "evaluations", "evaluation_id")
        con.execute(
            """INSERT INTO evaluations (evaluation_id, run_id, ruleset, rules_hash, rules_source, created_at,
                                        n_responses, rules_text, profile, with_spans)
               VALUES (?, ?, ?, ?, ?, now(), ?, ?, ?, ?)""",
            [evaluation_id, run_id, ruleset, rules.hash, rules.source, n, rules.text, profile, with_spans],
        )
        columns = _ResultColumns()
        init_args = (rules.text, rules.source, ruleset, profile, with_spans)
        for results in _evaluate_all(con, run_id, init_args, workers):
            for response_id, result in results:
                columns.add(response_id, result)
            if bar is not None:
                bar.update(len(results))
            if len(columns.overall["response_id"]) >= 100_000:
                _flush(con, columns, evaluation_id)
        _flush(con, columns, evaluation_id)
        duration = time.perf_counter() - started
        con.execute("UPDATE evaluations SET duration_s = ? WHERE evaluation_id = ?", [duration, evaluation_id])
    if bar is not None:
        bar.close()
    return RecomputeResult(evaluation_id, run_name, ruleset, rules.hash, n, duration)


def _flush(con: duckdb.DuckDBPyConnection, columns: _ResultColumns, evaluation_id: int) -> None:
    from evaluator.results import IS_T3_SQL, TEMPLATE_GROUP_SQL

    if columns.overall["response_id"]:
        con.register("o", pa.table(columns.overall))
        try:
            con.execute(
                f"""INSERT INTO response_results
                    SELECT ?, o.response_id, o.overall, {IS_T3_SQL}, {TEMPLATE_GROUP_SQL}
                    FROM o JOIN responses r ON r.response_id = o.response_id
                    JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id""",
                [evaluation_id],
            )
        finally:
            con.unregister("o")
    columns.flush(con, evaluation_id)


def _evaluate_all(
    con: duckdb.DuckDBPyConnection, run_id: int, init_args: tuple[Any, ...], workers: int
) -> Iterator[list[tuple[int, ResponseEvaluation]]]:
    if workers <= 1:
        _init_worker(*init_args)
        for rows in _row_batches(con, run_id):
            yield _evaluate_rows(rows)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=init_args) as pool:
        pending = []
        for rows in _row_batches(con, run_id):
            pending.append(pool.submit(_evaluate_rows, rows))
            if len(pending) > workers * 2:  # bound memory: keep a few batches in flight
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def _progress_bar(progress: bool, total: int, run_name: str, ruleset: str) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=f"{run_name} / {ruleset}", unit=" responses", unit_scale=True, mininterval=0.5)
