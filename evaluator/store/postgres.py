"""The store in PostgreSQL (issue 32): `--db postgresql://user@host:port/dbname`.

DuckDB stays the engine: each process opens one DuckDB instance in memory, loads the `postgres`
extension from the `duckdb-ext-postgres` wheel (found through importlib, never downloaded), ATTACHes
the database and USEs it, so the project's SQL runs unchanged over PostgreSQL's tables (the checks,
metrics and page aggregates are computed by DuckDB, reading the tables through PostgreSQL's COPY).

What differs from a store file, and why:

- **No turns, no lock files, nothing written beside the store.** PostgreSQL's transactions (repeatable
  read, as DuckDB's extension opens them) keep concurrent writers apart; a serialization failure or a
  lost race on a unique key is retried by the writer (`is_conflict`). Several processes on several
  hosts may hold the store at once.
- **Sequences live in PostgreSQL**: DuckDB cannot CREATE SEQUENCE or call nextval() through the
  extension, so migrations make them with `postgres_execute` (inside the migration's transaction) and
  ids are drawn with `postgres_query` (`next_ids`).
- **Exactly-once saves by a UNIQUE constraint** (save_tokens, migration 13) rather than a process's lock.

The extension is built for one DuckDB release: PyPI has `duckdb-ext-postgres` for DuckDB 1.4.4 only
(pip install 'rag-review-dashboard[postgres]' pins both); DuckDB 2 refuses it and says so here.
"""

from __future__ import annotations

import importlib.util
import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb

URL_PREFIXES = ("postgresql://", "postgres://")
ALIAS = "store"  # the attached database's name in DuckDB (postgres_execute / postgres_query name it)
EXTENSION_FILE = "postgres_scanner.duckdb_extension"
INSTALL_HINT = "pip install 'rag-review-dashboard[postgres]' (duckdb==1.4.4 and duckdb-ext-postgres==1.4.4.20260205)"

# PostgreSQL's words for a transaction that lost a race and may simply be tried again: a
# serialization failure (40001), a deadlock (40P01), or a unique key another transaction wrote first.
CONFLICT_MARKERS = ("could not serialize access", "deadlock detected", "duplicate key value violates unique constraint")


class ServerStoreError(RuntimeError):
    """The PostgreSQL store cannot be opened (no extension for this DuckDB, server unreachable)."""


def is_server(db: object) -> bool:
    """Is `db` (an argument, EVALUATOR_DB) a PostgreSQL URL rather than a store file?"""
    return isinstance(db, str) and db.startswith(URL_PREFIXES)


def redacted(url: str) -> str:
    """The URL without its password (user:PASSWORD@ or ?password=), for messages and labels."""
    url = re.sub(r"(://[^:/@]+):[^@/]*@", r"\1:***@", url)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", url)


def scrubbed(text: str, url: str) -> str:
    """``text`` (an error DuckDB's postgres extension wrote, which may quote the connection string)
    with the URL's password replaced."""
    password = re.search(r"://[^:/@]+:([^@/]*)@", url) or re.search(r"(?i)[?&]password=([^&]*)", url)
    text = text.replace(url, redacted(url))
    return text.replace(password.group(1), "***") if password and password.group(1) else text


def extension_directory() -> str:
    """The folder DuckDB loads `postgres` from: the one in the duckdb-ext-postgres wheel, for this
    DuckDB's version and platform (the wheel holds only the signed binary)."""
    spec = importlib.util.find_spec("duckdb_ext")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    version = duckdb.__version__
    for place in places:
        root = Path(place) / "extensions"
        if any(root.glob(f"v{version}/*/{EXTENSION_FILE}")):
            return str(root)
    found = sorted({p.parent.parent.name for place in places
                    for p in Path(place).glob(f"extensions/*/*/{EXTENSION_FILE}")})
    have = f"the installed duckdb-ext-postgres is for DuckDB {', '.join(found)}" if found else \
        "duckdb-ext-postgres is not installed"
    raise ServerStoreError(f"a PostgreSQL store needs DuckDB's postgres extension for DuckDB {version}, and {have}; "
                           f"{INSTALL_HINT}")


# A scan of a PostgreSQL table is split into one query per this many of its pages (8 kB each; the
# extension's default is 1,000). Each query repeats the filters DuckDB pushed down, so a page's
# lookup by response ids costs one index scan per query: a 1M-response run's check results
# (160k pages) took 160 queries and 1.5–1.9 s for Triage's 50 cards, 32 queries and 0.05–0.06 s
# this way. Larger tasks (50,000) cut that to 0.02 s but slowed the scans a join can stop early
# (Overview's pass rates with overrides: 0.4 s at 1,000 and 5,000, 1.2–3 s at 50,000).
PAGES_PER_TASK = 5_000


# One query per table, for reads that name their rows: each of a scan's queries looks every named id up
# in the index, so 200 reviewed responses' check results (12M rows, 60 queries) took 1.0 s, and 0.01 s
# as one query (`few_rows`).
PAGES_PER_TASK_FEW_ROWS = 100_000_000


@contextmanager
def few_rows(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """For reads whose every large table is filtered by the ids of the rows it wants (a page's worth,
    bound one by one: evaluator.store.sql_params.Params.among): each table read as one PostgreSQL query,
    on this cursor only, until the block ends. Nothing changes for a store file."""
    if not is_server_connection(con):
        yield con
        return
    # (RESET would give the extension's default, 1,000, not the instance's PAGES_PER_TASK)
    previous = int(con.execute("SELECT current_setting('pg_pages_per_task')").fetchall()[0][0])
    con.execute(f"SET SESSION pg_pages_per_task = {PAGES_PER_TASK_FEW_ROWS}")
    try:
        yield con
    finally:
        with suppress(duckdb.Error):  # the connection failed: the read's own error is the one to see
            con.execute(f"SET SESSION pg_pages_per_task = {previous}")


def open_instance(url: str, url_literal: str) -> duckdb.DuckDBPyConnection:
    """A DuckDB instance in memory with the PostgreSQL database attached as ALIAS and in use
    (`url_literal`: the URL quoted as an SQL string, by evaluator.store.db.quote_literal)."""
    con = duckdb.connect(config={"extension_directory": extension_directory(),
                                 "autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        con.execute("LOAD postgres")
        con.execute(f"SET GLOBAL pg_pages_per_task = {PAGES_PER_TASK}")
        con.execute(f"ATTACH {url_literal} AS {ALIAS} (TYPE postgres)")
        use(con)
    except duckdb.Error as exc:
        con.close()
        # from None: the extension's own error, chained, would print the password in a traceback
        raise ServerStoreError(f"{redacted(url)}: cannot open the store: {scrubbed(str(exc), url)}") from None
    return con


def use(cursor: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Make the PostgreSQL database the cursor's default (USE is per connection, each cursor is one),
    and print no progress bar on stdout (a query waiting for another's lock runs long)."""
    cursor.execute(f"USE {ALIAS}")
    cursor.execute("SET enable_progress_bar = false")
    cursor.execute("SET enable_progress_bar_print = false")
    _SERVER_CURSORS.add(cursor)
    return cursor


# Cursors reading a PostgreSQL store (every one is made by `use`): asking DuckDB instead would cost a
# query per call (2 ms on a busy machine), on the file store's paths too (each id drawn, each save).
_SERVER_CURSORS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()


def is_server_connection(con: duckdb.DuckDBPyConnection) -> bool:
    return con in _SERVER_CURSORS


def execute(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """PostgreSQL-only SQL (DDL DuckDB cannot say), in the cursor's current transaction."""
    con.execute("CALL postgres_execute($alias, $sql)", {"alias": ALIAS, "sql": sql})


def next_ids(con: duckdb.DuckDBPyConnection, sequence: str, n: int) -> list[int]:
    """`n` values of a PostgreSQL sequence (in the cursor's transaction; sequences never roll back)."""
    if not re.fullmatch(r"[a-z_]+", sequence):
        raise ValueError(f"not a sequence name: {sequence!r}")
    query = f"SELECT nextval('{sequence}') FROM generate_series(1, {int(n)})"
    return [int(row[0]) for row in con.execute("SELECT * FROM postgres_query($alias, $sql)",
                                               {"alias": ALIAS, "sql": query}).fetchall()]


def is_conflict(exc: BaseException) -> bool:
    """A transaction PostgreSQL refused because another won a race: try it again."""
    return isinstance(exc, duckdb.Error) and any(marker in str(exc) for marker in CONFLICT_MARKERS)


# What DuckDB's extension says once the server went away or restarted. The instance cannot recover by
# itself: its pooled connections are dead, and each failed connect keeps a slot of its pool (64), so
# after a minute of retries it refuses every query even once the server is back. See lost_connection.
LOST_CONNECTION_MARKERS = ("Unable to connect to Postgres", "server closed the connection",
                           "PostgresConnectionPool", "terminating connection", "no connection to the server",
                           "could not receive data from server", "could not send data to server")


def lost_connection(exc: BaseException) -> bool:
    """The server went away (or restarted) under this instance: the next cursor needs a fresh one."""
    return isinstance(exc, duckdb.Error) and any(marker in str(exc) for marker in LOST_CONNECTION_MARKERS)


CREATE_SEQUENCE = re.compile(r"CREATE SEQUENCE (\w+) START 1;")
# DuckDB's extension names a JSON column's type "JSON" (quoted) in ALTER TABLE, which PostgreSQL lacks.
ADD_JSON_COLUMN = re.compile(r"ALTER TABLE (\w+) ADD COLUMN (\w+) JSON;")


def migration_sql(sql: str) -> str:
    """A migration's SQL as it runs over PostgreSQL: what DuckDB cannot say there (sequences, a JSON
    column added) said by PostgreSQL itself, in the migration's transaction."""
    sql = CREATE_SEQUENCE.sub(
        lambda m: f"CALL postgres_execute('{ALIAS}', 'CREATE SEQUENCE IF NOT EXISTS {m.group(1)} START 1');", sql)
    return ADD_JSON_COLUMN.sub(
        lambda m: f"CALL postgres_execute('{ALIAS}', 'ALTER TABLE {m.group(1)} ADD COLUMN {m.group(2)} json'); "
                  "CALL pg_clear_cache();", sql)
