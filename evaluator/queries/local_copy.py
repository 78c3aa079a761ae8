"""A dashboard process's own copy of a PostgreSQL store's big rows, for the reads that pass over a
whole evaluation (issue 32): Triage's count and order, Review's place in that order, Before/after's
pairs of verdicts.

On PostgreSQL those reads cross the wire for every row on every render (a 1M-response run: Triage
4.5 s, Before/after 17 s), while a store file answers them in 0.3–0.6 s. What they read is written
once and never changed: a run's responses and questions (ingest), an evaluation's verdicts, check
results and flags (recompute; the LLM span judge's flag excepted, which it rewrites). So the first
time a page asks for a big run (``COPY_FROM`` responses or more, ``EVALUATOR_LOCAL_COPY_FROM``), a
thread copies those rows into a DuckDB file of this process (in a temporary folder of its own,
removed when the process ends: nothing is written beside the store, and a replica's disk may be lost
on restart), and the page waits for it (1M responses: about 6 s; up to ``FIRST_VISIT_WAIT_S``, then
it reads PostgreSQL; other sessions asking meanwhile wait for the same copy). Once the copy holds every run
and evaluation a read needs, ``reading`` hands out a cursor whose default database is the copy:
the copied tables are local, and every other table is a view of PostgreSQL's, read live (overrides,
annotations, runs, evaluations, counts; the span judge's flags too), so a reviewer's save shows at
once on every replica. The SQL of the pages is the same on both cursors.

A copy is keyed by id (run and evaluation ids are never reused) and by the store's schema version
(another process migrating the store empties it). A run deleted after it was copied is simply never
asked for again: the pages find runs and evaluations in the live tables. (It writes nothing to the
store, as nothing in queries/ does: only its own file.)
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from evaluator.pipeline.judges.llm_spans import SPAN_FLAG
from evaluator.store import postgres
from evaluator.store.db import connect, db_path_of, fetch_value, quote_ident, quote_literal
from evaluator.store.sql_params import Params

LOG = logging.getLogger(__name__)

# Runs with fewer responses are read from PostgreSQL directly: their pages take well under a second.
COPY_FROM = 100_000
COPY_FROM_ENV = "EVALUATOR_LOCAL_COPY_FROM"
ALIAS = "local_copy"
# The tables copied, each by the column that says which run or evaluation a row belongs to.
BY_RUN = ("responses", "questions")
BY_EVALUATION = ("response_results", "check_results", "flags")
# A page's first visit to a big run waits this long for its copy (1M responses: about 6 s), then
# reads PostgreSQL.
FIRST_VISIT_WAIT_S = 60.0
RETRY_AFTER_S = 300.0  # after a copy failed (its disk full, say), the pages read PostgreSQL this long
COPIED_FLAGS = "copied_flags"  # the flags table's copy; `flags` is a view adding the judge's live rows


def copy_from() -> int:
    """Responses from which a run is copied (EVALUATOR_LOCAL_COPY_FROM, else COPY_FROM)."""
    value = os.environ.get(COPY_FROM_ENV, "").strip()
    if not value:
        return COPY_FROM
    try:
        return max(int(value), 0)
    except ValueError:
        raise ValueError(f"{COPY_FROM_ENV}={value!r}: give a number of responses (0: copy every run)") from None


class _Copy:
    """The process's copy of one PostgreSQL store: its file, what it holds, what is being copied."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.folder = Path(tempfile.mkdtemp(prefix="evaluator-local-copy-"))
        self.path = self.folder / "copy.duckdb"
        self.lock = threading.Lock()  # what is wanted, the threads
        # Held while the file is written (a copy, its schema made again): a page waits for it at most
        # FIRST_VISIT_WAIT_S, then reads PostgreSQL.
        self.work = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.wanted: set[tuple[str, int]] = set()  # asked for, not copied yet (or being copied)
        self.failed: str | None = None  # the last copy's error, for the log; the pages read live meanwhile
        self.failed_at = -RETRY_AFTER_S

    def attached(self, con: duckdb.DuckDBPyConnection) -> None:
        """The copy attached to the cursor's instance (instances close when idle; the file stays), its
        tables made, and emptied when the store's schema changed since."""
        version = int(fetch_value(con, "SELECT coalesce(max(version), 0) FROM schema_migrations"))
        if not fetch_value(con, "SELECT count(*) FROM duckdb_databases() WHERE database_name = $alias",
                           {"alias": ALIAS}):
            con.execute(f"ATTACH IF NOT EXISTS {quote_literal(str(self.path))} AS {ALIAS}")
        held = fetch_value(con, f"""SELECT count(*) FROM duckdb_tables()
                                    WHERE database_name = '{ALIAS}' AND table_name = 'copy_schema'""")
        if held and fetch_value(con, f"SELECT max(version) FROM {ALIAS}.main.copy_schema") == version:
            return
        con.execute(f"DETACH {ALIAS}")
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".wal").unlink(missing_ok=True)
        con.execute(f"ATTACH {quote_literal(str(self.path))} AS {ALIAS}")
        tables = [row[0] for row in con.execute(
            """SELECT table_name FROM duckdb_tables()
               WHERE database_name = $store AND schema_name = 'public' ORDER BY 1""",
            {"store": postgres.ALIAS}).fetchall()]
        for table in tables:
            source = f"{postgres.ALIAS}.public.{quote_ident(table)}"
            if table in BY_RUN or table in BY_EVALUATION:
                name = COPIED_FLAGS if table == "flags" else table
                con.execute(f"CREATE TABLE {ALIAS}.main.{quote_ident(name)} AS FROM {source} LIMIT 0")
            else:
                con.execute(f"CREATE VIEW {ALIAS}.main.{quote_ident(table)} AS FROM {source}")
        con.execute(f"""CREATE VIEW {ALIAS}.main.flags AS
                        FROM {ALIAS}.main.{COPIED_FLAGS}
                        UNION ALL BY NAME
                        FROM {postgres.ALIAS}.public.flags WHERE flag = {quote_literal(SPAN_FLAG)}""")
        con.execute(f"CREATE TABLE {ALIAS}.main.copied (kind VARCHAR, id BIGINT)")
        con.execute(f"CREATE TABLE {ALIAS}.main.copy_schema AS SELECT {version} AS version")

    def held(self, con: duckdb.DuckDBPyConnection, needed: set[tuple[str, int]]) -> bool:
        rows = con.execute(f"SELECT kind, id FROM {ALIAS}.main.copied").fetchall()
        return needed <= {(str(kind), int(i)) for kind, i in rows}

    def copy(self, needed: set[tuple[str, int]]) -> None:
        """Copy what is needed and not held (in a thread of its own; holds the store open meanwhile)."""
        try:
            with connect(self.url, read_only=True) as con, self.work:
                self.attached(con)
                rows = con.execute(f"SELECT kind, id FROM {ALIAS}.main.copied").fetchall()
                for kind, key in sorted(needed - {(str(k), int(i)) for k, i in rows}):
                    self._copy_one(con, kind, key)
                self.failed = None
        except Exception as exc:  # noqa: BLE001 — the pages read PostgreSQL meanwhile; asked again later
            self.failed = postgres.scrubbed(f"{type(exc).__name__}: {exc}", self.url)
            self.failed_at = time.monotonic()
            LOG.warning("local copy of %s: %s", postgres.redacted(self.url), self.failed)
        finally:
            with self.lock:
                self.wanted -= needed

    def _copy_one(self, con: duckdb.DuckDBPyConnection, kind: str, key: int) -> None:
        """One run's or one evaluation's rows, in one transaction (PostgreSQL's snapshot: whole)."""
        tables = BY_RUN if kind == "run" else BY_EVALUATION
        column = "run_id" if kind == "run" else "evaluation_id"
        con.execute("BEGIN")
        try:
            for table in tables:
                source = f"{postgres.ALIAS}.public.{quote_ident(table)}"
                target = f"{ALIAS}.main.{COPIED_FLAGS if table == 'flags' else quote_ident(table)}"
                judged = " AND flag <> $judge" if table == "flags" else ""
                con.execute(f"INSERT INTO {target} BY NAME FROM {source} WHERE {column} = $key{judged}",
                            {"key": key, **({"judge": SPAN_FLAG} if judged else {})})
            con.execute(f"INSERT INTO {ALIAS}.main.copied VALUES ($kind, $key)", {"kind": kind, "key": key})
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def start(self, needed: set[tuple[str, int]]) -> None:
        with self.lock:
            missing = needed - self.wanted
            if not missing or time.monotonic() - self.failed_at < RETRY_AFTER_S:
                return
            self.wanted |= missing
            thread = threading.Thread(target=self.copy, args=(missing,), name="local-copy", daemon=True)
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        thread.start()

    def wait(self, timeout_s: float | None = None) -> None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in list(self.threads):
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


_COPIES: dict[str, _Copy] = {}
_COPIES_LOCK = threading.Lock()


def _copy_of(url: str) -> _Copy:
    with _COPIES_LOCK:
        found = _COPIES.get(url)
        if found is None:
            found = _COPIES[url] = _Copy(url)
        return found


@atexit.register
def _remove_copies() -> None:
    for copy in list(_COPIES.values()):
        copy.remove()


def wait(url: str, timeout_s: float | None = None) -> None:
    """Until the copies started for this store have finished (tests; a benchmark's warm-up)."""
    found = _COPIES.get(url)
    if found is not None:
        found.wait(timeout_s)


@contextmanager
def reading(con: duckdb.DuckDBPyConnection,
            evaluation_ids: Iterable[int | None]) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor for reads over these evaluations (and their runs): one whose tables are the local
    copy's when the store is in PostgreSQL, a run is big and the copy holds them all; else ``con``
    itself (and, for a big run not copied yet, its copy is started). Read only through it: its views
    take no writes."""
    wanted = sorted({int(e) for e in evaluation_ids if e is not None})
    if not wanted or not postgres.is_server_connection(con):
        yield con
        return
    params = Params("e")
    runs = con.execute(f"""SELECT e.evaluation_id, e.run_id, r.n_responses FROM evaluations e
                           JOIN runs r USING (run_id) WHERE e.evaluation_id IN ({params.among(wanted)})""",
                       params.values).fetchall()
    if not runs or max(int(n or 0) for _, _, n in runs) < max(copy_from(), 1):
        yield con
        return
    needed = {("run", int(run)) for _, run, _ in runs} | {("evaluation", int(e)) for e, _, _ in runs}
    copy = _copy_of(str(db_path_of(con)))
    ready = _ready(copy, con, needed, time.monotonic())
    if not ready:
        # Waiting for the copy beats reading PostgreSQL meanwhile: both at once took 41 s for a 1M
        # run's Before/after (the copy alone 6 s, the read from PostgreSQL alone 17 s).
        deadline = time.monotonic() + FIRST_VISIT_WAIT_S
        copy.start(needed)
        copy.wait(FIRST_VISIT_WAIT_S)
        ready = _ready(copy, con, needed, deadline)
    if not ready:
        yield con
        return
    cursor = con.cursor()
    try:
        cursor.execute(f"USE {ALIAS}")
        cursor.execute("SET enable_progress_bar = false")
        yield cursor
    finally:
        cursor.close()


def _ready(copy: _Copy, con: duckdb.DuckDBPyConnection, needed: set[tuple[str, int]], deadline: float) -> bool:
    """Does the copy hold what is needed? (False when it is being written past ``deadline``.)"""
    if not copy.work.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
        return False
    try:
        copy.attached(con)
        return copy.held(con, needed)
    except duckdb.Error as exc:  # the copy's file unusable (its disk full, say): read PostgreSQL
        copy.failed = str(exc)
        return False
    finally:
        copy.work.release()
