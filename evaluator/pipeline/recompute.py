"""Recompute a stored run under a rule set and store the evaluation (store glue, no rules here).

Set-based at the edges: DuckDB streams the run out as Arrow batches and takes the results
back as Arrow tables; the pure evaluator runs in between, in a process pool on big runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from evaluator.core.errors import UsageError
from evaluator.core.evaluate import evaluate, evaluate_batch
from evaluator.core.types import FLAG_NAMES, ResponseEvaluation
from evaluator.core.workers import die_with_parent, worker_pool
from evaluator.pipeline.responses import (
    BATCH_ROWS,
    RUN_QUESTIONS_SQL,
    Batch,
    Results,
    batch_inputs,
    flat_batches,
    id_batches,
    question_columns,
    spans_json,
)
from evaluator.rules.load import Rules, load_rules, rules_from_text
from evaluator.store.db import atomic, connect, drop_quietly, fetch_one, fetch_value, next_id
from evaluator.store.results import CHECKS_SCHEMA, FLAGS_SCHEMA, OVERALL_SCHEMA, write_evaluation_counts
from evaluator.store.run_lookup import run_id_for
from evaluator.store.staging import RunChangedError, Stage, attached, copy_back, snapshot_run, staging_area

# ``progress``: False (quiet), True (a tqdm bar on stderr) or a callback given the share done.
Progress = bool | Callable[[float], None]

FLUSH_ROWS = 100_000  # evaluated responses held in memory before they are written
STAGED_EVALUATION_ID = 0  # the evaluation's id in the staging file; the store's sequence gives the real one
PARALLEL_FROM = 50_000  # below this, a process pool costs more than it saves
PYTHON_PARALLEL_FROM = 10_000  # the rows the SQL engine leaves to Python: in a pool from this many
SPANS_UP_TO = 100_000  # store highlight spans for runs up to this size; bigger runs compute them on display
# python: the reference (stores highlight spans); sql: evaluator.pipeline.sql (DuckDB decides, Python the
# rest; no spans, several times less CPU); auto: python when spans are stored, else sql.
ENGINES = ("auto", "python", "sql")

@dataclass(frozen=True)
class RecomputeResult:
    evaluation_id: int
    run: str
    ruleset: str
    rules_hash: str
    n_responses: int
    duration_s: float
    engine: str = "python"  # the engine that evaluated: python or sql


# --- worker side (top-level so the process pool can pickle it) ---------------------------

_WORKER: dict[str, Any] = {}


def _worker_state(rules_text: str, rules_source: str, ruleset: str, profile: str, with_spans: bool,
                  questions: pa.Table) -> dict[str, Any]:
    """What evaluating a batch needs, built once per worker (or per evaluation in this process)."""
    return {"rules": rules_from_text(rules_text, rules_source), "ruleset": ruleset, "profile": profile,
            "with_spans": with_spans, "questions": question_columns(questions)}


def _init_worker(rules_text: str, rules_source: str, ruleset: str, profile: str, with_spans: bool,
                 questions: pa.Table, parent_pid: int | None) -> None:
    die_with_parent(parent_pid)
    _WORKER.update(_worker_state(rules_text, rules_source, ruleset, profile, with_spans, questions))


def _evaluate_batch(batch: Batch, state: dict[str, Any] | None = None) -> Results:
    """Worker: evaluate one flat batch; the results go back as Arrow tables (cheap to send).
    ``state``: _worker_state's (None: the worker's own, from _init_worker)."""
    state = _WORKER if state is None else state
    ids, inputs = batch_inputs(batch, state["questions"])
    rules: Rules = state["rules"]
    if state["with_spans"]:
        results = [
            evaluate(resp, ruleset=state["ruleset"], rules=rules, profile=state["profile"], with_spans=True)
            for resp in inputs
        ]
    else:
        results = evaluate_batch(inputs, ruleset=state["ruleset"], rules=rules, profile=state["profile"])
    columns = _ResultColumns()
    for response_id, result in zip(ids, results, strict=True):
        columns.add(response_id, result)
    return columns.tables()


# --- store side ------------------------------------------------------------------------------


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

    def tables(self) -> Results:
        return (pa.table(self.checks, schema=CHECKS_SCHEMA), pa.table(self.flags, schema=FLAGS_SCHEMA),
                pa.table(self.overall, schema=OVERALL_SCHEMA))


def recompute(
    db: str | os.PathLike[str] | None,
    run_name: str,
    ruleset: str,
    *,
    rules: Rules | None = None,
    with_spans: bool | None = None,
    workers: int | None = None,
    progress: Progress = False,
    profile: str | None = None,
    engine: str = "auto",
    verify_n: int = 0,
) -> RecomputeResult:
    """Evaluate every response of a run and store the evaluation, holding the store only to copy
    the run out and to append the results in one transaction (evaluator.store.staging). ``profile``
    (a profile of ``rules``) replaces the run's own for this evaluation. ``engine`` "python" is
    the reference; "sql" decides inside DuckDB (evaluator.pipeline.sql, no stored spans) and, with
    ``verify_n``, first re-evaluates that many random responses in Python, writing nothing on a
    difference (evaluator.pipeline.sql.engine.VerifyError); "auto" is python when spans are stored (runs
    up to SPANS_UP_TO, or ``with_spans``) and sql otherwise (or with ``verify_n``). ``progress``: see
    Progress (a callback is called from this thread)."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine == "auto" and verify_n:
        engine = "sql"
    if engine == "python" and verify_n:
        raise UsageError("--verify checks the sql engine against the Python reference: add --engine sql")
    if engine == "sql" and with_spans:
        raise UsageError("the sql engine stores no spans (pages compute them when shown): drop --spans "
                         "or use --engine python")
    rules = rules or load_rules()
    rules.ruleset(ruleset)  # an unknown rule set or profile fails before the store is opened
    if profile is not None:
        rules.profile(profile)
    with staging_area(db) as stage:
        with connect(db, read_only=True, upgrade=True) as con:  # read window (shared with readers)
            run_id = run_id_for(con, run_name)
            row = fetch_one(con, "SELECT profile, n_responses, content_hash FROM runs WHERE run_id = $run",
                            {"run": run_id})
            assert row is not None
            run_profile, n, content_hash = str(row[0]), int(row[1]), row[2]
            profile = profile or run_profile
            if profile not in rules.profile_names:
                raise UsageError(f"run {run_name!r} has profile {profile!r}, which the rules ({rules.source}) do not "
                                 f"define; pass --rules with a file that defines it, or --profile "
                                 f"({', '.join(rules.profile_names)})")
            if with_spans is None:
                with_spans = engine != "sql" and n <= SPANS_UP_TO
            if engine == "auto":
                engine = "python" if with_spans else "sql"
            if engine == "sql":
                sql = _SqlRecompute(rules, ruleset, profile, run_id, progress=progress, label=run_name, total=n,
                                    workers=workers)
                sql.plan(con, verify_n)
            else:
                snapshot_run(con, run_id, stage)
        try:
            if engine == "sql":
                sql.decide(db, stage, run_name, content_hash)
                sql.finish(stage, verify_n)
            else:
                scon = stage.connect()
                try:
                    duration = evaluate_into(scon, STAGED_EVALUATION_ID, run_id, ruleset, rules, profile,
                                             with_spans=with_spans, workers=workers, progress=progress,
                                             label=run_name)
                finally:
                    scon.close()
            # write window: the evaluation gets its id from the store's sequence as it is written
            with connect(db) as con, attached(con, stage, read_only=True) as alias, atomic(con):
                if fetch_one(con, "SELECT content_hash FROM runs WHERE run_id = $run",
                             {"run": run_id}) != (content_hash,):
                    raise RunChangedError(f"run {run_name!r} was replaced or removed while it was being evaluated; "
                                          "nothing was written: run the command again")
                evaluation_id = next_id(con, "evaluation_ids")
                # the SQL engine's staging file holds only some responses: its counts are made here
                tables = ("evaluations", "response_results", "check_results", "flags",
                          *(() if engine == "sql" else ("evaluation_counts", "flag_counts")))
                for table in tables:
                    copy_back(con, alias, table, "evaluation_id = $staged",
                              {"staged": STAGED_EVALUATION_ID, "evaluation": evaluation_id},
                              replace={"evaluation_id": "$evaluation"})
                if engine == "sql":
                    duration = sql.counted(con, evaluation_id)
        finally:
            if engine == "sql":
                sql.close()
    return RecomputeResult(evaluation_id, run_name, ruleset, rules.hash, n, duration, engine)


def evaluate_into(
    con: duckdb.DuckDBPyConnection, evaluation_id: int, run_id: int, ruleset: str, rules: Rules, profile: str,
    *, with_spans: bool, workers: int | None = None, progress: Progress = False, label: str = "",
) -> float:
    """Evaluate the run held by `con` (the staging file) with the Python reference and write the
    evaluation there, in one transaction; returns the time it took."""
    n = int(fetch_value(con, "SELECT count(*) FROM responses WHERE run_id = $run", {"run": run_id}))
    workers = workers if workers is not None else (min(os.cpu_count() or 1, 4) if n >= PARALLEL_FROM else 1)
    started = time.perf_counter()
    bar = _progress_bar(progress, n, label, ruleset)
    with atomic(con):
        _insert_evaluation(con, evaluation_id, run_id, ruleset, rules, profile, n, with_spans)
        done: list[Results] = []
        held = 0
        questions = con.sql(RUN_QUESTIONS_SQL, params={"run": run_id}).to_arrow_table()
        init_args = (rules.text, rules.source, ruleset, profile, with_spans, questions, os.getpid())
        for results in _evaluate_all(flat_batches(con, run_id), init_args, workers):
            done.append(results)
            held += results[2].num_rows
            if bar is not None:
                bar.update(results[2].num_rows)
            if held >= FLUSH_ROWS:
                _flush(con, done, evaluation_id)
                held = 0
        _flush(con, done, evaluation_id)
        duration = _finish_evaluation(con, evaluation_id, started)
    if bar is not None:
        bar.close()
    return duration


def _insert_evaluation(con: duckdb.DuckDBPyConnection, evaluation_id: int, run_id: int, ruleset: str, rules: Rules,
                       profile: str, n: int, with_spans: bool) -> None:
    con.execute(
        """INSERT INTO evaluations (evaluation_id, run_id, ruleset, rules_hash, rules_source, created_at,
                                    n_responses, rules_text, profile, with_spans)
           VALUES ($evaluation, $run, $ruleset, $hash, $source, now(), $n, $text, $profile, $with_spans)""",
        {"evaluation": evaluation_id, "run": run_id, "ruleset": ruleset, "hash": rules.hash,
         "source": rules.source, "n": n, "text": rules.text, "profile": profile, "with_spans": with_spans},
    )


def _finish_evaluation(con: duckdb.DuckDBPyConnection, evaluation_id: int, started: float, *,
                       until: float | None = None) -> float:
    """The evaluation's counts and duration (from ``started`` to now, or ``until``), once its rows
    are in; returns the duration."""
    write_evaluation_counts(con, evaluation_id)
    duration = (time.perf_counter() if until is None else until) - started
    con.execute("UPDATE evaluations SET duration_s = $duration WHERE evaluation_id = $evaluation",
                {"duration": duration, "evaluation": evaluation_id})
    return duration


class _SqlRecompute:
    """recompute with the SQL engine, in the windows of recompute (issue 16). SQL decides on the
    store itself (cheaper than copying the run out), one read window per chunk of responses,
    writing what it decides into the staging file; only the rows it leaves to Python, with the
    responses ``--verify`` samples, are copied there. Python decides those on the staging file,
    and the sample is verified before the write window opens, so a VerifyError writes nothing.
    The write window copies the evaluation in as the Python path's does, and counts it there
    (the staging file holds only some responses). No spans are stored. The bar follows DuckDB's
    own progress through the queries (90% of it), then the rest."""

    def __init__(self, rules: Rules, ruleset: str, profile: str, run_id: int, *, progress: Progress, label: str,
                 total: int, workers: int | None = None) -> None:
        self.rules, self.ruleset, self.profile, self.run_id, self.total = rules, ruleset, profile, run_id, total
        self.workers = workers  # for the rows left to Python; None: by their number
        self.started = time.perf_counter()
        self.bar = _progress_bar(progress, total, label, ruleset)
        self.sample: list[int] = []
        self.undecided: list[int] = []
        self.ranges: list[tuple[int, int]] = []
        self.evaluated_at: float | None = None

    def advance(self, share: float) -> None:
        if self.bar is not None:
            self.bar.n = max(self.bar.n, int(self.total * share))
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:  # closed on every exit
            self.bar.close()
            self.bar = None

    def plan(self, con: duckdb.DuckDBPyConnection, verify_n: int) -> None:
        """In recompute's read window: the chunks to decide, and the responses to verify."""
        from evaluator.pipeline.sql.engine import id_ranges, pick_sample  # the SQL engine builds on this module

        try:
            self.ranges = id_ranges(con, self.run_id)
            if verify_n > 0:
                ids = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = $run ORDER BY 1",
                                                 {"run": self.run_id}).fetchall()]
                self.sample = pick_sample(ids, verify_n)
        except BaseException:
            self.close()
            raise

    def decide(self, db: str | os.PathLike[str] | None, stage: Stage, run_name: str, content_hash: Any) -> None:
        """SQL decides on the store, one read window per chunk (a writer waiting for the store,
        such as a reviewer's save, gets its turn between chunks, and pages queued behind it wait
        for one chunk at most); then the rows left to Python are copied to the staging file."""
        from evaluator.pipeline.sql.engine import decide_into

        for i, chunk in enumerate(self.ranges):
            def chunk_progress(share: float, i: int = i) -> None:
                self.advance(0.9 * (i + share) / len(self.ranges))

            with connect(db, read_only=True) as con:
                self._unchanged(con, run_name, content_hash)
                with attached(con, stage) as alias:
                    self.undecided += decide_into(
                        con, self.run_id, alias, STAGED_EVALUATION_ID, [chunk], ruleset=self.ruleset,
                        rules=self.rules, profile=self.profile,
                        on_progress=chunk_progress if self.bar is not None else None)
        python_ids = sorted(set(self.undecided) | set(self.sample))
        if python_ids:
            with connect(db, read_only=True) as con:
                self._unchanged(con, run_name, content_hash)
                snapshot_run(con, self.run_id, stage, responses=python_ids)

    def _unchanged(self, con: duckdb.DuckDBPyConnection, run_name: str, content_hash: Any) -> None:
        if fetch_one(con, "SELECT content_hash FROM runs WHERE run_id = $run", {"run": self.run_id}) != (content_hash,):
            raise RunChangedError(f"run {run_name!r} was replaced or removed while it was being evaluated; "
                                  "nothing was written: run the command again")

    def finish(self, stage: Stage, verify_n: int) -> None:
        """On the staging file: Python decides what SQL left, then the sample is verified."""
        from evaluator.pipeline.sql.engine import SqlRun, verify

        scon = stage.connect()
        try:
            with atomic(scon):
                self._python_decides(scon)
                n = int(fetch_value(scon, "SELECT count(*) FROM response_results WHERE evaluation_id = $e",
                                    {"e": STAGED_EVALUATION_ID}))
                _insert_evaluation(scon, STAGED_EVALUATION_ID, self.run_id, self.ruleset, self.rules, self.profile,
                                   n, False)
            if verify_n > 0:
                where = "WHERE evaluation_id = $e AND list_contains($ids, response_id)"

                def staged(schema: pa.Schema, table: str, order: str, **more: object) -> pa.Table:
                    return scon.sql(f"SELECT {', '.join(schema.names)} FROM {table} {where} ORDER BY {order}",
                                    params={"e": STAGED_EVALUATION_ID, "ids": self.sample, **more}
                                    ).to_arrow_table().cast(schema)

                checks = staged(CHECKS_SCHEMA, "check_results", "response_id, check_name")
                overall = staged(OVERALL_SCHEMA, "response_results", "response_id")
                flags = staged(FLAGS_SCHEMA, "flags", "response_id, list_position($flags, flag)",  # verify's order
                               flags=list(FLAG_NAMES))
                verify(scon, SqlRun(checks, overall, flags, 0, 0), verify_n, ruleset=self.ruleset, rules=self.rules,
                       profile=self.profile, sample=self.sample)
        finally:
            scon.close()
        self.evaluated_at = time.perf_counter()  # the duration is the evaluation's, not the wait for the store

    def _python_decides(self, scon: duckdb.DuckDBPyConnection) -> None:
        """The Python reference evaluates the rows SQL left (on the staging file, which holds them),
        in a process pool when there are many (answers with accents or in other scripts can be most
        of a run)."""
        if not self.undecided:
            return
        workers = max(1, self.workers if self.workers is not None else (
            min(os.cpu_count() or 1, 4) if len(self.undecided) >= PYTHON_PARALLEL_FROM else 1))
        questions = scon.sql(RUN_QUESTIONS_SQL, params={"run": self.run_id}).to_arrow_table()
        init_args = (self.rules.text, self.rules.source, self.ruleset, self.profile, False, questions, os.getpid())
        done: list[Results] = []
        held = 0
        # smaller batches than a whole run's: a few batches would leave a worker idle at the end
        batches = id_batches(scon, self.undecided, max(1, min(BATCH_ROWS, len(self.undecided) // (4 * workers))))
        for results in _evaluate_all(batches, init_args, workers):
            done.append(results)
            held += results[2].num_rows
            if held >= FLUSH_ROWS:
                _flush(scon, done, STAGED_EVALUATION_ID)
                held = 0
        _flush(scon, done, STAGED_EVALUATION_ID)

    def counted(self, con: duckdb.DuckDBPyConnection, evaluation_id: int) -> float:
        """In the write window's transaction, once the evaluation is copied in: its counts and
        duration (returned)."""
        duration = _finish_evaluation(con, evaluation_id, self.started, until=self.evaluated_at)
        self.advance(1.0)
        return duration


def _flush(con: duckdb.DuckDBPyConnection, done: list[Results], evaluation_id: int) -> None:
    """Append the evaluated batches set-wise: response outcomes, check results, flags."""
    from evaluator.store.results import APPEND_SQL

    if not done:
        return
    checks, flags, overall = (pa.concat_tables([results[i] for results in done]) for i in range(3))
    done.clear()
    for table, data in (("response_results", overall), ("check_results", checks), ("flags", flags)):
        if not data.num_rows:
            continue
        con.register("evaluated_rows", data)
        try:
            con.execute(APPEND_SQL[table].format(into="", rows="evaluated_rows"), {"evaluation": evaluation_id})
        finally:
            drop_quietly(con, views=("evaluated_rows",))


def _evaluate_all(batches: Iterator[Batch], init_args: tuple[Any, ...], workers: int) -> Iterator[Results]:
    if workers <= 1:
        # In this process, with state of its own: evaluations in other threads (the dashboard's
        # recomputes) must not see it, as they would the module's _WORKER.
        state = _worker_state(*init_args[:-1])
        for batch in batches:
            yield _evaluate_batch(batch, state)
        return
    # An early end (SIGTERM, Ctrl-C, an error) kills the workers instead of waiting for their batches.
    with worker_pool(workers, _init_worker, init_args) as pool:
        pending = []
        for batch in batches:
            pending.append(pool.submit(_evaluate_batch, batch))
            if len(pending) > workers * 2:  # bound memory: keep a few batches in flight
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


class _Reported:
    """A progress "bar" that hands the share done to a callback (the Rule lab's) instead of drawing."""

    def __init__(self, total: int, report: Callable[[float], None]) -> None:
        self.total, self.report, self.n = total, report, 0

    def update(self, k: int) -> None:
        self.n += k
        self.refresh()

    def refresh(self) -> None:
        self.report(min(1.0, self.n / self.total) if self.total else 1.0)

    def close(self) -> None:
        pass


def _progress_bar(progress: Progress, total: int, run_name: str, ruleset: str) -> Any:
    if not progress:
        return None
    if callable(progress):
        return _Reported(total, progress)
    from tqdm import tqdm

    return tqdm(total=total, desc=f"{run_name} / {ruleset}", unit=" responses", unit_scale=True, mininterval=0.5)
