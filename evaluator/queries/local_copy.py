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
on restart), and the page waits for it (1M responses, a run and two evaluations: about 20 s; up to
``FIRST_VISIT_WAIT_S``, then it reads PostgreSQL; other sessions asking meanwhile wait for the same
copy). The newest big runs are copied before anyone asks (``copy_ahead``,
``EVALUATOR_LOCAL_COPY_AHEAD``), so their first visit finds them copied. Once the copy holds every
run and evaluation a read needs, ``reading`` hands out a cursor whose default database is the copy:
the copied tables are local, and every other table is a view of PostgreSQL's, read live (overrides,
annotations, runs, evaluations, counts; the span judge's flags too), so a reviewer's save shows at
once on every replica. The SQL of the pages is the same on both cursors. A text search asks for the
run's search index too: it is copied in the background when PostgreSQL has one (1M responses: 88M
postings, about 40 s), and until then a search through the copy reads every answer of the copy
(about 1.3 s at 1M; through PostgreSQL's index, 6–8 s). A page on a copied run never waits for
another copy, nor a run's copy for a search index's.
Before/after keeps there each pair of evaluations' computed verdicts (``computed_pairs``), and lays
the reviewers' rulings, read live, over them.

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
# The newest big runs copied before a page asks for them (``copy_ahead``): their first visit finds
# them copied instead of waiting for the copy (20 s at 1M). 0 turns it off.
AHEAD = 2
AHEAD_ENV = "EVALUATOR_LOCAL_COPY_AHEAD"
AHEAD_EVERY_S = 60.0  # how often a process looks for new big runs (a page render at most this often)
ALIAS = "local_copy"
# The tables copied, each by the column that says which run or evaluation a row belongs to.
BY_RUN = ("responses", "questions")
BY_EVALUATION = ("response_results", "check_results", "flags")
# A run's search index (evaluator.pipeline.search_index), copied once a text search asks for it and
# PostgreSQL holds one; meanwhile a search reads every answer of the copy (1M responses: about 1.3 s,
# against 6–8 s through PostgreSQL's index, and 0.4 s through the copied one).
BY_SEARCH = ("search_indexes", "search_vocab", "search_words")
KIND_TABLES = {"run": BY_RUN, "evaluation": BY_EVALUATION, "search": BY_SEARCH}
KIND_COLUMN = {"run": "run_id", "evaluation": "evaluation_id", "search": "run_id"}
# A page's first visit to a big run waits this long for its copy (1M responses, a run and two
# evaluations: about 20 s), then reads PostgreSQL.
FIRST_VISIT_WAIT_S = 60.0
RETRY_AFTER_S = 300.0  # after a copy failed (its disk full, say), the pages read PostgreSQL this long
COPIED_FLAGS = "copied_flags"  # the flags table's copy; `flags` is a view adding the judge's live rows
# The texts a search reads whole, stored uncompressed: a search through the index reads the answers of
# its candidates only, which compressed (FSST) costs decompressing every answer (1M responses: a
# search 0.45 s instead of 0.10 s; a pass over every answer 0.70 s instead of 0.45 s; the copy's
# file 0.92 GB instead of 0.47 GB for a run and two evaluations).
UNCOMPRESSED = {"responses": ("answer", "comment"), "questions": ("question",)}


def copy_from() -> int:
    """Responses from which a run is copied (EVALUATOR_LOCAL_COPY_FROM, else COPY_FROM)."""
    return _setting(COPY_FROM_ENV, COPY_FROM, "give a number of responses (0: copy every run)")


def ahead() -> int:
    """How many of the newest big runs are copied before a page asks (EVALUATOR_LOCAL_COPY_AHEAD, else AHEAD)."""
    return _setting(AHEAD_ENV, AHEAD, "give a number of runs (0: copy a run only when a page asks for it)")


def _setting(name: str, default: int, what: str) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return max(int(value), 0)
    except ValueError:
        raise ValueError(f"{name}={value!r}: {what}") from None


class _Copy:
    """The process's copy of one PostgreSQL store: its file, what it holds, what is being copied."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.folder = Path(tempfile.mkdtemp(prefix="evaluator-local-copy-"))
        self.path = self.folder / "copy.duckdb"
        self.lock = threading.Lock()  # what is wanted, the threads; the file's attachment
        # The file's writers. `work`: copies of runs and evaluations, and making the file's tables again;
        # `search_work`: copies of search indexes (40 s at 1M), so that a run's copy need not wait for
        # one. A page reads the committed copy meanwhile and waits only for the copies it needs (its
        # first visit, at most FIRST_VISIT_WAIT_S; then it reads PostgreSQL). Order: work, search_work, lock.
        self.work = threading.Lock()
        self.search_work = threading.Lock()
        self.threads: list[tuple[frozenset[tuple[str, int]], threading.Thread]] = []
        self.wanted: set[tuple[str, int]] = set()  # asked for, not copied yet (or being copied)
        self.failed: str | None = None  # the last copy's error, for the log; the pages read live meanwhile
        self.failed_at = -RETRY_AFTER_S
        self.copying: set[duckdb.DuckDBPyConnection] = set()  # the cursors copying now (under `lock`)
        self.ending = False  # the process is ending: copy nothing more

    def current(self, con: duckdb.DuckDBPyConnection) -> bool:
        """Attach the copy to the cursor's instance (instances close when idle; the file stays): are its
        tables those of the store's schema? (Another process migrating the store makes them stale.)"""
        if not fetch_value(con, "SELECT count(*) FROM duckdb_databases() WHERE database_name = $alias",
                           {"alias": ALIAS}):
            con.execute(f"ATTACH IF NOT EXISTS {quote_literal(str(self.path))} AS {ALIAS}")
        made = fetch_value(con, f"""SELECT count(*) FROM duckdb_tables()
                                    WHERE database_name = '{ALIAS}' AND table_name = 'copy_schema'""")
        return bool(made) and fetch_value(con, f"SELECT max(version) FROM {ALIAS}.main.copy_schema") == \
            self.version(con)

    @staticmethod
    def version(con: duckdb.DuckDBPyConnection) -> int:
        return int(fetch_value(con, "SELECT coalesce(max(version), 0) FROM schema_migrations"))

    def attached(self, con: duckdb.DuckDBPyConnection, timeout_s: float = -1) -> bool:
        """The copy attached and of the store's schema: emptied and its tables made again if need be,
        which waits for ``work`` (at most ``timeout_s``; False when that passed)."""
        with self.lock:  # (never between another thread's DETACH and ATTACH of the file in `remade`)
            if self.current(con):
                return True
        if not self.work.acquire(timeout=timeout_s):
            return False
        try:
            self.remade(con)
            return True
        finally:
            self.work.release()

    def remade(self, con: duckdb.DuckDBPyConnection) -> None:
        """Empty the copy and make its tables for the store's schema, unless current (holding ``work``;
        a search index being copied is waited for then)."""
        with self.lock:
            if self.current(con):
                return
        with self.search_work, self.lock:
            if self.current(con):
                return
            version = self.version(con)
            con.execute(f"DETACH {ALIAS}")
            self.path.unlink(missing_ok=True)
            self.path.with_name(self.path.name + ".wal").unlink(missing_ok=True)
            con.execute(f"ATTACH {quote_literal(str(self.path))} AS {ALIAS}")
            tables = [row[0] for row in con.execute(
                """SELECT table_name FROM duckdb_tables()
                   WHERE database_name = $store AND schema_name = 'public' ORDER BY 1""",
                {"store": postgres.ALIAS}).fetchall()]
            copied = {table for tables_of_kind in KIND_TABLES.values() for table in tables_of_kind}
            for table in tables:
                source = f"{postgres.ALIAS}.public.{quote_ident(table)}"
                if table in copied:
                    name = COPIED_FLAGS if table == "flags" else table
                    columns = ", ".join(
                        f"{quote_ident(column)} {kind}"
                        + (" USING COMPRESSION uncompressed" if column in UNCOMPRESSED.get(table, ()) else "")
                        for column, kind, *_ in con.execute(f"DESCRIBE {source}").fetchall())
                    con.execute(f"CREATE TABLE {ALIAS}.main.{quote_ident(name)} ({columns})")
                else:
                    con.execute(f"CREATE VIEW {ALIAS}.main.{quote_ident(table)} AS FROM {source}")
            con.execute(f"""CREATE VIEW {ALIAS}.main.flags AS
                            FROM {ALIAS}.main.{COPIED_FLAGS}
                            UNION ALL BY NAME
                            FROM {postgres.ALIAS}.public.flags WHERE flag = {quote_literal(SPAN_FLAG)}""")
            con.execute(f"CREATE TABLE {ALIAS}.main.copied (kind VARCHAR, id BIGINT)")
            con.execute(f"CREATE TABLE {ALIAS}.main.copy_schema AS SELECT {version} AS version")

    def holding(self, con: duckdb.DuckDBPyConnection) -> set[tuple[str, int]]:
        """What the copy holds (committed): (kind, run or evaluation id)."""
        return {(str(kind), int(i)) for kind, i in con.execute(f"SELECT kind, id FROM {ALIAS}.main.copied").fetchall()}

    def held(self, con: duckdb.DuckDBPyConnection, needed: set[tuple[str, int]]) -> bool:
        return needed <= self.holding(con)

    def copy(self, needed: set[tuple[str, int]]) -> None:
        """Copy what is needed and not held (in a thread of its own; holds the store open meanwhile).
        Search indexes are copied only into a copy of the store's current schema (asked for by a page
        that read it), runs and evaluations into one made again first if need be."""
        search = all(kind == "search" for kind, _ in needed)
        con: duckdb.DuckDBPyConnection | None = None
        try:
            with connect(self.url, read_only=True) as con, (self.search_work if search else self.work):
                with self.lock:
                    if self.ending:
                        return
                    self.copying.add(con)
                if search:
                    with self.lock:
                        if not self.current(con):
                            return
                else:
                    self.remade(con)
                for kind, key in sorted(needed - self.holding(con)):
                    if self.ending:
                        return
                    self._copy_one(con, kind, key)
                self.failed = None
        except Exception as exc:  # noqa: BLE001 — the pages read PostgreSQL meanwhile; asked again later
            if self.ending:  # interrupted by end()
                return
            self.failed = postgres.scrubbed(f"{type(exc).__name__}: {exc}", self.url)
            self.failed_at = time.monotonic()
            LOG.warning("local copy of %s: %s", postgres.redacted(self.url), self.failed)
        finally:
            with self.lock:
                self.wanted -= needed
                if con is not None:
                    self.copying.discard(con)

    def _copy_one(self, con: duckdb.DuckDBPyConnection, kind: str, key: int) -> None:
        """One run's, evaluation's or search index's rows, in one transaction (PostgreSQL's snapshot: whole)."""
        tables, column = KIND_TABLES[kind], KIND_COLUMN[kind]
        con.execute("BEGIN")
        try:
            for table in tables:
                source = f"{postgres.ALIAS}.public.{quote_ident(table)}"
                target = f"{ALIAS}.main.{COPIED_FLAGS if table == 'flags' else quote_ident(table)}"
                judged = " AND flag <> $judge" if table == "flags" else ""
                con.execute(f"INSERT INTO {target} BY NAME FROM {source} WHERE {column} = $key{judged}",
                            {"key": key, **({"judge": SPAN_FLAG} if judged else {})})
            if kind == "search" and not fetch_value(
                    con, f"SELECT count(*) FROM {ALIAS}.main.search_indexes WHERE run_id = $key", {"key": key}):
                con.execute("ROLLBACK")  # dropped meanwhile: nothing to hold (a later search asks again)
                return
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
            self.threads = [(kinds, t) for kinds, t in self.threads if t.is_alive()] + [(frozenset(missing), thread)]
            thread.start()  # (within the lock: a wait() never finds it not started)

    def wait(self, timeout_s: float | None = None, needed: set[tuple[str, int]] | None = None) -> None:
        """Until the copies started (of what is ``needed``, when given) have finished, or ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self.lock:
            threads = [t for kinds, t in self.threads if needed is None or kinds & needed]
        for thread in threads:
            thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))

    def end(self, timeout_s: float = 10.0) -> None:
        """Stop copying (the process is ending): interrupt the copies under way and wait for their
        threads. A process that ends while a thread is inside DuckDB aborts (status 134)."""
        with self.lock:
            self.ending = True
            for cursor in self.copying:
                cursor.interrupt()
            threads = [thread for _, thread in self.threads]
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0))

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


_COPIES: dict[str, _Copy] = {}
_COPIES_LOCK = threading.Lock()
_LOOKED_AHEAD: dict[str, float] = {}  # store URL -> when copy_ahead last looked for its new big runs


def _copy_of(url: str) -> _Copy:
    with _COPIES_LOCK:
        found = _COPIES.get(url)
        if found is None:
            found = _COPIES[url] = _Copy(url)
        return found


@atexit.register
def _remove_copies() -> None:
    for copy in list(_COPIES.values()):
        copy.end()
        copy.remove()


def wait(url: str, timeout_s: float | None = None) -> None:
    """Until the copies started for this store have finished (tests; a benchmark's warm-up)."""
    found = _COPIES.get(url)
    if found is not None:
        found.wait(timeout_s)


@contextmanager
def reading(con: duckdb.DuckDBPyConnection, evaluation_ids: Iterable[int | None], *,
            search: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor for reads over these evaluations (and their runs): one whose tables are the local
    copy's when the store is in PostgreSQL, a run is big and the copy holds them all; else ``con``
    itself (and, for a big run not copied yet, its copy is started). With ``search`` (a text search
    is read), the runs' search indexes are copied too, in the background: until they are, a search
    through the copy reads every answer. Read only through it: its views take no writes."""
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
    deadline = time.monotonic() + FIRST_VISIT_WAIT_S
    ready = _ready(copy, con, needed, deadline)
    if not ready:
        # Waiting for the copy beats reading PostgreSQL meanwhile: both at once took 41 s for a 1M
        # run's Before/after (the copy alone 6 s, the read from PostgreSQL alone 17 s).
        copy.start(needed)
        copy.wait(max(deadline - time.monotonic(), 0.0), needed)
        ready = _ready(copy, con, needed, deadline)
    if not ready:
        yield con
        return
    if search:
        _copy_search_indexes(copy, con, {run for kind, run in needed if kind == "run"})
    cursor = con.cursor()
    try:
        cursor.execute(f"USE {ALIAS}")
        cursor.execute("SET enable_progress_bar = false")
        yield cursor
    finally:
        cursor.close()


def copy_ahead(con: duckdb.DuckDBPyConnection) -> None:
    """Start copying, in the background, the newest ``ahead()`` big runs of a PostgreSQL store: each run,
    the latest evaluation of each of its rule sets (those the pages open on), then, at a later look, its
    search index, where the copy does not hold them yet. Looks at most every ``AHEAD_EVERY_S`` (a page
    render calls it), so a run that a CI job ingests is copied within a minute of the next page anyone
    opens. Nothing on a store file."""
    if not postgres.is_server_connection(con) or ahead() == 0:
        return
    url = str(db_path_of(con))
    with _COPIES_LOCK:
        if time.monotonic() - _LOOKED_AHEAD.get(url, -AHEAD_EVERY_S) < AHEAD_EVERY_S:
            return
        _LOOKED_AHEAD[url] = time.monotonic()
    try:
        rows = con.execute("""WITH newest AS (SELECT run_id FROM runs WHERE n_responses >= $from
                                              ORDER BY run_id DESC LIMIT $ahead)
                              SELECT n.run_id, max(e.evaluation_id), bool_or(s.run_id IS NOT NULL)
                              FROM newest n LEFT JOIN evaluations e USING (run_id)
                                            LEFT JOIN search_indexes s USING (run_id)
                              GROUP BY n.run_id, e.ruleset""",
                           {"from": max(copy_from(), 1), "ahead": ahead()}).fetchall()
        if not rows:
            return  # (no copy made: a store of small runs gets no temporary folder)
        copy = _copy_of(url)
        wanted = {("run", int(run)) for run, _, _ in rows}
        wanted |= {("evaluation", int(e)) for _, e, _ in rows if e is not None}
        # (Attaching the copy costs milliseconds; while a copy is being written, look again next time.)
        if not copy.attached(con, timeout_s=0):
            return
        held = copy.holding(con)
    except duckdb.Error as exc:  # a page renders on: this is only ahead of its time
        LOG.warning("local copy: looking for new big runs: %s", postgres.scrubbed(str(exc), url))
        return
    if wanted - held:
        copy.start(wanted - held)
    else:  # a search index once its run is copied, not beside it: both at once slow the run's copy
        searched = {("search", int(run)) for run, _, indexed in rows if indexed} - held
        if searched:
            copy.start(searched)


def computed_pairs(cursor: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> str | None:
    """On a cursor ``reading`` handed out (one of the copy): the name of a table of the copy holding, for
    every response evaluated by both, its computed verdicts under A and B (booleans, PASS = true) and
    what Before/after groups them by: ``(response_id, template, ca, cb, run_id, question_id, provider)``.
    Like the rows it is made of it never changes, so it is made once (1M responses: 0.4 s) and every
    render of Before/after lays only the reviewers' rulings over it. None on any other connection."""
    if not fetch_value(cursor, """SELECT current_database() = $alias AND EXISTS (SELECT 1 FROM duckdb_databases()
                                  WHERE database_name = $store AND type = 'postgres')""",
                       {"alias": ALIAS, "store": postgres.ALIAS}):
        return None  # (a store file may be named local_copy.duckdb: its connection has no PostgreSQL attached)
    a, b = int(evaluation_a), int(evaluation_b)
    name = f"computed_pairs_{a}_{b}"  # (two ids: nothing else goes into the name)
    path = str(db_path_of(cursor))  # the copy's file (the cursor's database)
    copy = next((c for c in list(_COPIES.values()) if str(c.path) == path), None)
    if copy is None:
        return None
    run = fetch_value(cursor, "SELECT run_id FROM evaluations WHERE evaluation_id = $a", {"a": a})
    try:
        # The short lock: the file is never made again meanwhile, and a copy being written (a search
        # index: 40 s) does not hold up the page.
        with copy.lock:
            if not copy.current(cursor) or not copy.held(
                    cursor, {("evaluation", a), ("evaluation", b), ("run", int(run or -1))}):
                return None  # (made again since the cursor was handed out: its rows are to be copied again)
            made = fetch_value(cursor, f"""SELECT count(*) FROM duckdb_tables()
                                          WHERE database_name = '{ALIAS}' AND table_name = $name""", {"name": name})
            if not made:
                cursor.execute(f"""CREATE TABLE {ALIAS}.main.{name} AS
                                   SELECT ra.response_id, ra.template_group AS template, ra.overall = 'PASS' AS ca,
                                          rb.overall = 'PASS' AS cb, r.run_id, r.question_id, r.provider
                                   FROM {ALIAS}.main.response_results ra
                                   JOIN {ALIAS}.main.response_results rb
                                     ON rb.evaluation_id = $b AND rb.response_id = ra.response_id
                                   JOIN {ALIAS}.main.responses r ON r.response_id = ra.response_id
                                   WHERE ra.evaluation_id = $a""", {"a": a, "b": b})
    except duckdb.Error as exc:  # (its disk full, say): Before/after pairs the verdicts itself
        LOG.warning("local copy: the pairs of evaluations %s and %s: %s", a, b, exc)
        return None
    return f"{ALIAS}.main.{name}"


def _ready(copy: _Copy, con: duckdb.DuckDBPyConnection, needed: set[tuple[str, int]], deadline: float) -> bool:
    """Does the copy hold what is needed? (False when its tables are being made again past ``deadline``.)"""
    try:
        return copy.attached(con, max(deadline - time.monotonic(), 0.0)) and copy.held(con, needed)
    except duckdb.Error as exc:  # the copy's file unusable (its disk full, say): read PostgreSQL
        copy.failed = str(exc)
        return False


def _copy_search_indexes(copy: _Copy, con: duckdb.DuckDBPyConnection, runs: set[int]) -> None:
    """Start copying the search index of those runs that have one in PostgreSQL and not in the copy
    (until it is copied, a search through the copy reads every answer: nothing fails meanwhile)."""
    try:
        missing = {("search", run) for run in runs} - copy.holding(con)
        if not missing:
            return
        params = Params("r")
        indexed = {("search", int(run)) for (run,) in con.execute(
            f"SELECT run_id FROM search_indexes WHERE run_id IN ({params.among(sorted(r for _, r in missing))})",
            params.values).fetchall()}
    except duckdb.Error as exc:
        LOG.warning("local copy: the search indexes of runs %s: %s", sorted(runs), exc)
        return
    if indexed:
        copy.start(indexed)
