"""The DuckDB store: where it lives, how to open it, transactions, migrations.

DuckDB lets one process hold a file for writing at a time, so nothing here keeps a
connection open between requests: the CLI and the dashboard each open late, close
early, and wait (bounded) while the other holds the file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from evaluator.migrations import MIGRATIONS

DEFAULT_DB = Path("data") / "evaluator.duckdb"
LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked")


class StoreBusyError(RuntimeError):
    """Another process held the store for longer than we were willing to wait."""


def resolve_db_path(arg: str | os.PathLike[str] | None = None) -> Path:
    """`--db`, else env EVALUATOR_DB, else data/evaluator.duckdb."""
    if arg:
        return Path(arg)
    env = os.environ.get("EVALUATOR_DB")
    return Path(env) if env else DEFAULT_DB


def quote_ident(name: str) -> str:
    """The one place identifiers are quoted (values are always bound as parameters)."""
    return '"' + name.replace('"', '""') + '"'


def _open(path: Path, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if not any(marker in str(exc) for marker in LOCK_MARKERS):
                raise
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    f"{path}: the store is busy (another process is writing to it); try again"
                ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


@contextmanager
def connect(
    path: str | os.PathLike[str] | None = None, *, read_only: bool = False, timeout_s: float = 30.0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the store (creating and migrating it when writable) and close it afterwards."""
    db_path = resolve_db_path(path)
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    elif not db_path.exists():
        raise FileNotFoundError(f"{db_path}: no store here yet; ingest a run first")
    con = _open(db_path, read_only, timeout_s)
    try:
        if not read_only:
            migrate(con)
        yield con
    finally:
        con.close()


@contextmanager
def atomic(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction: commit on success, roll back on any exception."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def applied_versions(con: duckdb.DuckDBPyConnection) -> list[int]:
    exists = fetch_value(
        con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
    )
    if not exists:
        return []
    return [row[0] for row in con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()]


def migrate(con: duckdb.DuckDBPyConnection, *, upto: int | None = None) -> list[int]:
    """Apply pending migrations in order, each in its own transaction; return those applied."""
    done = set(applied_versions(con))
    applied = []
    for version, name, sql in MIGRATIONS:
        if version in done or (upto is not None and version > upto):
            continue
        with atomic(con):
            con.execute(sql)
            con.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, now())",
                [version, name],
            )
        applied.append(version)
    return applied


def next_id(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """The next value of a sequence: ids are never reused, so links and overrides never point
    at something that replaced what they meant."""
    return int(fetch_value(con, "SELECT nextval(?)", [sequence]))


def fetch_one(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> tuple | None:
    """First row or None. DuckDB 2 keeps a half-read result open (blocking the connection's
    next call), so read results whole instead of with fetchone()."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def fetch_value(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> Any:
    row = fetch_one(con, sql, params)
    return None if row is None else row[0]
