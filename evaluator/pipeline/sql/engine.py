"""Evaluate a whole run inside DuckDB (issue 16 §1): the SQL engine beside the Python reference.

``evaluate_run_sql`` returns the rows recompute writes - check results, response outcomes,
raised flags (Arrow tables, no spans) - deciding in SQL every row compile.py can decide and
handing the rest to the Python reference (``evaluate_batch``). Its two halves apart:
``decide_in_sql`` (or ``decide_into``, which recompute runs on the store, writing into the
staging file) and ``python_tables`` (on the staging file, with just the rows SQL left).
``verify`` re-evaluates a random sample in Python and raises ``VerifyError`` naming the first
difference.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
from collections.abc import Callable, Collection, Generator, Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from evaluator.core.evaluate import evaluate_batch
from evaluator.core.sql_fragments import WS
from evaluator.core.types import CHECK_NAMES, FLAG_NAMES, ResponseEvaluation
from evaluator.pipeline.responses import load_responses
from evaluator.pipeline.sql.compile import compile_run
from evaluator.pipeline.sql.re2 import re2_compiles
from evaluator.rules.load import Rules
from evaluator.store.results import CHECKS_SCHEMA, FLAGS_SCHEMA, OVERALL_SCHEMA

PYTHON_BATCH = 5_000
# Responses decided per query: a 200k-response query peaks near 1 GB (its materialised
# features), a 1M one above 4 GB; a chunk costs one more scan of the retrieved items.
CHUNK_ROWS = 200_000
POLL_S = 0.25  # how often DuckDB's progress is read while the query runs


class VerifyError(Exception):
    """The SQL engine and the Python reference disagree; nothing may be committed."""


@dataclass(frozen=True)
class SqlRun:
    checks: pa.Table  # CHECKS_SCHEMA
    overall: pa.Table  # OVERALL_SCHEMA
    flags: pa.Table  # FLAGS_SCHEMA
    n_sql: int  # responses decided in SQL
    n_python: int  # responses SQL handed to the Python reference


def _fails_sql() -> str:
    """True where some check's verdict is FAIL: the overall verdict's rule (as evaluate._evaluate)."""
    return " OR ".join(f"{name}.v = 'FAIL'" for name in CHECK_NAMES)


def _unpivot_sql(table: str) -> tuple[str, str, str]:
    checks = " UNION ALL ".join(
        f"SELECT response_id, '{name}' AS check_name, {name}.v AS verdict, "
        f"CASE WHEN regexp_matches({name}.r, '[\\n\\r]') THEN trim(regexp_replace({name}.r, '{WS}+', ' ', 'g')) "
        f"ELSE {name}.r END AS reason, '[]' AS spans, {i} AS k FROM {table} WHERE decided"
        for i, name in enumerate(CHECK_NAMES))
    flags = " UNION ALL ".join(
        f"SELECT response_id, '{name}' AS flag, {name} AS severity, '[]' AS spans, {i} AS k FROM {table} "
        f"WHERE decided AND {name} IS NOT NULL" for i, name in enumerate(FLAG_NAMES))
    overall = (f"SELECT response_id, CASE WHEN {_fails_sql()} THEN 'FAIL' ELSE 'PASS' END AS overall FROM {table} "
               "WHERE decided ORDER BY response_id")
    return (f"SELECT response_id, check_name, verdict, reason, spans FROM ({checks}) ORDER BY response_id, k",
            f"SELECT response_id, flag, severity, spans FROM ({flags}) ORDER BY response_id, k", overall)


def _python_rows(con: duckdb.DuckDBPyConnection, ids: Sequence[int], *, ruleset: str, rules: Rules,
                 profile: str) -> dict[int, ResponseEvaluation]:
    out: dict[int, ResponseEvaluation] = {}
    for lo in range(0, len(ids), PYTHON_BATCH):
        inputs = load_responses(con, ids[lo : lo + PYTHON_BATCH])
        keys = list(inputs)
        for key, result in zip(keys, evaluate_batch(inputs.values(), ruleset=ruleset, rules=rules, profile=profile),
                               strict=True):
            out[key] = result
    return out


def _as_tables(results: dict[int, ResponseEvaluation]) -> tuple[pa.Table, pa.Table, pa.Table]:
    checks: dict[str, list[object]] = {k: [] for k in CHECKS_SCHEMA.names}
    flags: dict[str, list[object]] = {k: [] for k in FLAGS_SCHEMA.names}
    overall: dict[str, list[object]] = {k: [] for k in OVERALL_SCHEMA.names}
    for rid in sorted(results):
        ev = results[rid]
        for c in ev.checks:
            for k, v in zip(CHECKS_SCHEMA.names, (rid, c.check, c.verdict, c.reason, "[]"), strict=True):
                checks[k].append(v)
        for f in ev.flags:
            for k, v in zip(FLAGS_SCHEMA.names, (rid, f.flag, f.severity, "[]"), strict=True):
                flags[k].append(v)
        overall["response_id"].append(rid)
        overall["overall"].append(ev.overall)
    return (pa.table(checks, schema=CHECKS_SCHEMA), pa.table(overall, schema=OVERALL_SCHEMA),
            pa.table(flags, schema=FLAGS_SCHEMA))


def _run_polled(con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object],
                on_progress: Callable[[float], None] | None) -> None:
    """con.execute(sql, params), calling ``on_progress(share done)`` from another thread as DuckDB
    reports the query's progress (its bar enabled, not printed, for this query only)."""
    if on_progress is None:
        con.execute(sql, params)
        return
    settings = ("enable_progress_bar", "enable_progress_bar_print")
    previous = {name: con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0] for name in settings}
    con.execute("SET enable_progress_bar = true")
    con.execute("SET enable_progress_bar_print = false")
    done = threading.Event()

    def poll() -> None:
        best = 0.0  # DuckDB's estimate can step back between pipelines: a bar only moves forward
        while not done.wait(POLL_S):
            share = min(con.query_progress(), 100.0) / 100
            if share > best:
                best = share
                on_progress(share)

    poller = threading.Thread(target=poll, name="sql-engine-progress", daemon=True)
    poller.start()
    try:
        con.execute(sql, params)
    finally:
        done.set()
        poller.join()
        with contextlib.suppress(duckdb.Error):  # a failed query's own error is the one to see
            for name, value in previous.items():
                con.execute(f"SET {name} = {'true' if value else 'false'}")
    on_progress(1.0)


@dataclass(frozen=True)
class SqlDecided:
    """What SQL decided of a run: the rows of the responses it decided, and the ids it left to
    the Python reference."""
    checks: pa.Table  # CHECKS_SCHEMA
    overall: pa.Table  # OVERALL_SCHEMA
    flags: pa.Table  # FLAGS_SCHEMA
    undecided: list[int]

    def with_python(self, python: tuple[pa.Table, pa.Table, pa.Table]) -> SqlRun:
        """The whole run: these rows and the Python reference's ``(checks, overall, flags)`` of
        the undecided ones."""
        checks, overall, flags = python
        return SqlRun(pa.concat_tables([self.checks, checks]), pa.concat_tables([self.overall, overall]),
                      pa.concat_tables([self.flags, flags]), self.overall.num_rows, len(self.undecided))


def _decided_chunks(con: duckdb.DuckDBPyConnection, run_id: int, *, ruleset: str, rules: Rules, profile: str,
                    on_progress: Callable[[float], None] | None, only: Sequence[int] | None,
                    ranges: Sequence[tuple[int, int]], checks: Collection[str] | None = None,
                    flags: bool = True) -> Generator[str] | None:
    """The run decided one range of response ids at a time (``id_ranges``; one query each, so
    that memory stays bounded): yields the name of a temporary table of each chunk's query
    (compile_run's columns: ``checks`` and ``flags`` as there), dropped when the next is made.
    None when the rules have no SQL form (Python decides all). Close it when leaving early
    (contextlib.closing)."""
    table = f"sql_engine_{os.getpid()}_{run_id}"
    subset = f"{table}_only" if only is not None else None
    plan = compile_run(rules, ruleset, profile, only=subset, ranged=True, checks=checks, flags=flags)
    if plan is not None and "rx_refusal_any" in plan.params and not re2_compiles(con, plan.params["rx_refusal_any"]):
        # the refusal lists together exceed RE2's memory, each alone may not: no common scan
        plan = compile_run(rules, ruleset, profile, only=subset, ranged=True, checks=checks, flags=flags,
                           refusal_scan=False)
    if plan is not None and not all(re2_compiles(con, plan.params[k]) for k in plan.regexes):
        plan = None  # a pattern RE2 refuses (see re2_compiles): Python decides every row
    if plan is None:
        return None
    params = {k: v for k, v in {**plan.params, "run": run_id}.items() if re.search(rf"\${k}\b", plan.sql)}

    def chunks() -> Generator[str]:
        if subset is not None:
            # A temporary table, not a registered Arrow table: registering one imports pandas (0.5 s).
            con.execute(f"CREATE OR REPLACE TEMP TABLE {subset} AS SELECT unnest($ids)::BIGINT AS response_id",
                        {"ids": [int(i) for i in only or ()]})
        try:
            for i, (lo, hi) in enumerate(ranges):
                def chunk_progress(share: float, i: int = i) -> None:
                    if on_progress is not None:
                        on_progress((i + share) / len(ranges))

                _run_polled(con, f"CREATE OR REPLACE TEMP TABLE {table} AS {plan.sql}",
                            {**params, "lo": lo, "hi": hi}, chunk_progress if on_progress is not None else None)
                try:
                    yield table
                finally:
                    con.execute(f"DROP TABLE IF EXISTS temp.{table}")
        finally:
            if subset is not None:
                con.execute(f"DROP TABLE IF EXISTS temp.{subset}")

    return chunks()


def _all_ids(con: duckdb.DuckDBPyConnection, run_id: int, only: Sequence[int] | None) -> list[int]:
    ids = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = $run ORDER BY 1",
                                     {"run": run_id}).fetchall()]
    if only is not None:
        wanted = set(only)
        ids = [i for i in ids if i in wanted]
    return ids


def _undecided(con: duckdb.DuckDBPyConnection, table: str) -> list[int]:
    return [r[0] for r in con.execute(f"SELECT response_id FROM {table} WHERE NOT decided ORDER BY 1").fetchall()]


def decide_in_sql(con: duckdb.DuckDBPyConnection, run_id: int, *, ruleset: str, rules: Rules, profile: str,
                  on_progress: Callable[[float], None] | None = None,
                  only: Sequence[int] | None = None, chunk_rows: int = CHUNK_ROWS) -> SqlDecided:
    """The rows SQL decides of run ``run_id`` held by ``con`` (read only: the store itself will
    do), as Arrow tables, and the ids it leaves to Python (all of them when the rules have no SQL
    form). ``on_progress(share)`` follows the queries; ``only``: just these responses of the run."""
    chunks = _decided_chunks(con, run_id, ruleset=ruleset, rules=rules, profile=profile, on_progress=on_progress,
                             only=only, ranges=id_ranges(con, run_id, only, chunk_rows))
    if chunks is None:
        return SqlDecided(CHECKS_SCHEMA.empty_table(), OVERALL_SCHEMA.empty_table(), FLAGS_SCHEMA.empty_table(),
                          _all_ids(con, run_id, only))
    parts: list[tuple[pa.Table, pa.Table, pa.Table]] = []
    undecided: list[int] = []
    with contextlib.closing(chunks):
        for table in chunks:
            checks_sql, flags_sql, overall_sql = _unpivot_sql(table)
            parts.append((con.sql(checks_sql).to_arrow_table().cast(CHECKS_SCHEMA),
                          con.sql(overall_sql).to_arrow_table().cast(OVERALL_SCHEMA),
                          con.sql(flags_sql).to_arrow_table().cast(FLAGS_SCHEMA)))
            undecided += _undecided(con, table)
    parts = parts or [(CHECKS_SCHEMA.empty_table(), OVERALL_SCHEMA.empty_table(), FLAGS_SCHEMA.empty_table())]
    checks, overall, flags = (pa.concat_tables([part[k] for part in parts]) for k in range(3))
    return SqlDecided(checks, overall, flags, undecided)


def decide_into(con: duckdb.DuckDBPyConnection, run_id: int, alias: str, evaluation_id: int,
                ranges: Sequence[tuple[int, int]], *, ruleset: str, rules: Rules, profile: str,
                on_progress: Callable[[float], None] | None = None) -> list[int]:
    """decide_in_sql for the responses in ``ranges`` (``id_ranges``), writing the rows SQL decides
    straight into the tables of database ``alias`` (attached to ``con``; the staging file) as
    evaluation ``evaluation_id``, chunk by chunk (memory stays bounded whatever the run's size);
    ``con`` holds the run (responses and questions give each outcome its template group).
    Returns the ids left to Python."""
    from evaluator.store.results import APPEND_SQL

    chunks = _decided_chunks(con, run_id, ruleset=ruleset, rules=rules, profile=profile, on_progress=on_progress,
                             only=None, ranges=ranges)
    if chunks is None:
        return [i for i in _all_ids(con, run_id, None) if any(lo <= i <= hi for lo, hi in ranges)]
    undecided: list[int] = []
    with contextlib.closing(chunks):
        for table in chunks:
            checks_sql, flags_sql, overall_sql = _unpivot_sql(table)
            for target, rows in (("check_results", checks_sql), ("flags", flags_sql),
                                 ("response_results", overall_sql)):
                con.execute(APPEND_SQL[target].format(into=f"{alias}.", rows=f"({rows})"),
                            {"evaluation": evaluation_id})
            undecided += _undecided(con, table)
    return undecided


def id_ranges(con: duckdb.DuckDBPyConnection, run_id: int, only: Sequence[int] | None = None,
              chunk_rows: int = CHUNK_ROWS) -> list[tuple[int, int]]:
    """The run's response ids (``only``: these) in ranges of ``chunk_rows``, as (first, last)."""
    if only is not None:
        ids = sorted({int(i) for i in only})
        return [(ids[k], ids[min(k + chunk_rows, len(ids)) - 1]) for k in range(0, len(ids), chunk_rows)]
    rows = con.execute("""SELECT min(response_id), max(response_id) FROM (
                              SELECT response_id, (row_number() OVER (ORDER BY response_id) - 1) // $chunk AS k
                              FROM responses WHERE run_id = $run)
                          GROUP BY k ORDER BY k""", {"run": run_id, "chunk": chunk_rows}).fetchall()
    return [(int(lo), int(hi)) for lo, hi in rows]


def python_tables(con: duckdb.DuckDBPyConnection, ids: Sequence[int], *, ruleset: str, rules: Rules,
                  profile: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The Python reference's ``(checks, overall, flags)`` rows (no spans) for responses ``ids``
    held by ``con``."""
    return _as_tables(_python_rows(con, ids, ruleset=ruleset, rules=rules, profile=profile))


def evaluate_run_sql(con: duckdb.DuckDBPyConnection, run_id: int, *, ruleset: str, rules: Rules,
                     profile: str, on_progress: Callable[[float], None] | None = None,
                     only: Sequence[int] | None = None) -> SqlRun:
    """The evaluation of run ``run_id`` held by ``con``: SQL decides, Python decides what SQL cannot.
    ``on_progress(share)`` follows the query; ``only``: just these responses of the run."""
    decided = decide_in_sql(con, run_id, ruleset=ruleset, rules=rules, profile=profile, on_progress=on_progress,
                            only=only)
    return decided.with_python(python_tables(con, decided.undecided, ruleset=ruleset, rules=rules, profile=profile))


def evaluate_verdicts(con: duckdb.DuckDBPyConnection, run_id: int, *, ruleset: str, rules: Rules, profile: str,
                      only: Sequence[int] | None = None,
                      checks: Collection[str] | None = None) -> dict[int, tuple[str | None, ...]]:
    """Each response's checks' verdicts in CHECK_NAMES order under ``rules``, as ``evaluate_run_sql``
    decides them (``only``: just these responses), without the reasons and flags it also returns:
    what the Rule lab compares. ``checks``: SQL evaluates only these (None in the others' places:
    not evaluated); a response Python decides gets every verdict."""
    names = tuple(CHECK_NAMES)
    chosen = [name for name in names if checks is None or name in checks]
    out: dict[int, tuple[str | None, ...]] = {}
    chunks = _decided_chunks(con, run_id, ruleset=ruleset, rules=rules, profile=profile, on_progress=None,
                             only=only, ranges=id_ranges(con, run_id, only), checks=chosen, flags=False)
    undecided: list[int] = []
    if chunks is None:
        undecided = _all_ids(con, run_id, only)
    else:
        with contextlib.closing(chunks):
            for table in chunks:
                t = con.sql(f"SELECT response_id{''.join(f', {name}.v AS {name}' for name in chosen)} "
                            f"FROM {table} WHERE decided").to_arrow_table()
                got = {name: t.column(name).to_pylist() for name in chosen}
                if any(None in v for v in got.values()):
                    raise RuntimeError(f"a check's SQL form gave no verdict (run {run_id})")
                blank = [None] * t.num_rows
                for rid, *verdicts in zip(t.column("response_id").to_pylist(),
                                          *(got.get(name, blank) for name in names), strict=True):
                    out[rid] = tuple(verdicts)
                undecided += _undecided(con, table)
    for rid, ev in _python_rows(con, undecided, ruleset=ruleset, rules=rules, profile=profile).items():
        by_name = {c.check: c.verdict for c in ev.checks}
        out[rid] = tuple(by_name[name] for name in names)
    return out


def pick_sample(ids: Sequence[int], n: int, seed: int | None = None) -> list[int]:
    """The ``n`` responses (at random; all when fewer) that ``verify`` compares, sorted."""
    return sorted(random.Random(seed).sample(list(ids), min(n, len(ids))))


def verify(con: duckdb.DuckDBPyConnection, run: SqlRun, n: int, *, ruleset: str, rules: Rules, profile: str,
           seed: int | None = None, sample: Sequence[int] | None = None) -> int:
    """Re-evaluate ``n`` random responses in Python (``sample``: these, from ``pick_sample``, when
    ``con`` holds only them); VerifyError on the first difference. Returns how many were compared."""
    if sample is None:
        sample = pick_sample(run.overall.column("response_id").to_pylist(), n, seed)
    reference = _python_rows(con, sample, ruleset=ruleset, rules=rules, profile=profile)
    wanted = set(sample)
    got_checks: dict[tuple[int, str], tuple[str, str]] = {}
    for rid, name, verdict, reason in zip(*(run.checks.column(k).to_pylist()
                                            for k in ("response_id", "check_name", "verdict", "reason")), strict=True):
        if rid in wanted:
            got_checks[(rid, name)] = (verdict, reason)
    got_flags: dict[int, list[tuple[str, str]]] = {}
    for rid, name, severity in zip(*(run.flags.column(k).to_pylist() for k in ("response_id", "flag", "severity")),
                                   strict=True):
        if rid in wanted:
            got_flags.setdefault(rid, []).append((name, severity))
    for rid in sample:
        ev = reference[rid]
        for c in ev.checks:
            got = got_checks.get((rid, c.check))
            if got != (c.verdict, c.reason):
                raise VerifyError(f"response {rid}, check {c.check}: SQL engine says {got!r}, "
                                  f"Python reference says {(c.verdict, c.reason)!r}")
        want_flags = [(f.flag, f.severity) for f in ev.flags]
        if got_flags.get(rid, []) != want_flags:
            raise VerifyError(f"response {rid}, flags: SQL engine says {got_flags.get(rid, [])!r}, "
                              f"Python reference says {want_flags!r}")
    return len(sample)
