"""The DuckDB store: where it lives, how to open it, transactions, migrations.

DuckDB lets one process hold a file for writing at a time, and inside a process every
connection to a file must come from one database instance. So:

- **One instance per process and file.** `connect()` hands each caller (a browser session,
  a thread, a CLI phase) its own cursor of the process's single instance; the instance is
  opened by the first caller and closed when the last one leaves, so no process holds the
  file between requests.
- **Processes take turns through lock files beside the store** (`STORE.lock`, and
  `STORE.lock-queue` as a turnstile): a process that wants the store queues on the
  turnstile, so a busy dashboard cannot starve the CLI — once someone queues, the holder
  lets no new caller in and closes the file when its current callers are done.
- **Waiting is visible and bounded by the caller**: `connect()` reports progress through a
  callback (the CLI prints a line, a page shows a status) and gives up with StoreBusyError
  only after the caller's timeout (default: `set_waiting()`, else EVALUATOR_WAIT, else 600 s).

A store in PostgreSQL (`--db postgresql://…`, evaluator.store.postgres) takes none of these turns:
its transactions keep writers apart, and `connect()` hands out cursors of one DuckDB instance in
memory with the database attached.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evaluator.store import postgres
from evaluator.store.migrations import MIGRATIONS, NEEDS_STORAGE, SERVER_ONLY

if TYPE_CHECKING:
    import pyarrow as pa

# One process-wide lock around every write that is deduplicated by a client token (overrides,
# ratings): the threads of one process share the store instance, and under snapshot isolation two
# transactions that both look for the token first would both miss it and both insert. Across
# processes of a PostgreSQL store, save_tokens' primary key does the same (`save_once`).
SAVE_LOCK = threading.Lock()
CONFLICT_RETRIES = 20

DEFAULT_DB = Path("data") / "evaluator.duckdb"
LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked")
DEFAULT_WAIT_S = 600.0

# on_wait(seconds waited so far, who holds the store or None)
WaitCallback = Callable[[float, "str | None"], None]


# DuckDB's words for a file of a newer storage format than it reads ("created with an newer version").
NEWER_FILE_MARKER = "created with an newer version of DuckDB"


class NewerStoreFileError(RuntimeError):
    """A store file this DuckDB cannot read (written by a newer release): the message says what to run."""


class StoreBusyError(RuntimeError):
    """Another process held the store for longer than we were willing to wait."""


@dataclass
class _Waiting:
    timeout_s: float | None = None  # None: EVALUATOR_WAIT, else DEFAULT_WAIT_S
    on_wait: WaitCallback | None = None
    label: str = field(default_factory=lambda: " ".join(Path(a).name for a in sys.argv[:2]) or "python")


_WAITING = _Waiting()


def set_waiting(*, timeout_s: float | None = None, on_wait: WaitCallback | None = None,
                label: str | None = None) -> None:
    """Process-wide defaults of connect(): how long to wait, how to show it, and how this process
    is named to others waiting for it ("evaluator recompute", "the dashboard")."""
    _WAITING.timeout_s = timeout_s
    _WAITING.on_wait = on_wait
    if label is not None:
        _WAITING.label = label


def default_timeout() -> float:
    if _WAITING.timeout_s is not None:
        return _WAITING.timeout_s
    env = os.environ.get("EVALUATOR_WAIT")
    try:
        return float(env) if env else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


def resolve_db(arg: str | os.PathLike[str] | None = None) -> str | Path:
    """`--db`, else env EVALUATOR_DB, else data/evaluator.duckdb: a PostgreSQL URL as given (a str),
    else the store file's Path."""
    value = os.fspath(arg) if arg else os.environ.get("EVALUATOR_DB")
    if value and postgres.is_server(value):
        return value
    return Path(value) if value else DEFAULT_DB


def is_server(arg: str | os.PathLike[str] | None = None) -> bool:
    """Does `arg` (else EVALUATOR_DB) name a PostgreSQL store rather than a file?"""
    return isinstance(resolve_db(arg), str)


def resolve_db_path(arg: str | os.PathLike[str] | None = None) -> Path:
    """The store file: `--db`, else env EVALUATOR_DB, else data/evaluator.duckdb. A PostgreSQL URL
    has no file: callers that may be given one ask `is_server` first (ValueError otherwise)."""
    found = resolve_db(arg)
    if isinstance(found, str):
        raise ValueError(f"{postgres.redacted(found)} is a PostgreSQL store, not a file")
    return found


def quote_ident(name: str) -> str:
    """The one place identifiers are quoted (values are always bound as parameters)."""
    return '"' + name.replace('"', '""') + '"'


# A window over every row of the result: a total beside each row in the same pass. Not an empty OVER: under
# parallel execution DuckDB 1.4.4 (the release whose postgres extension PyPI ships) fails now and then on an
# unpartitioned, unordered window ("INTERNAL Error: Attempted to access index 0 within vector of size 0",
# about 1 in 300 Triage text searches), and an internal error invalidates the process's whole database
# until it restarts. A constant partition takes the window's other path: the same rows, the same time
# (0.29 s at 1M either way), and no failure in 10,000 runs where the empty one failed within 1,000.
OVER_ALL_ROWS = "OVER (PARTITION BY NULL)"


def quote_literal(text: str) -> str:
    """A string literal for the few statements DuckDB cannot bind (ATTACH of our own staging
    files); values from users are always bound as parameters."""
    return "'" + text.replace("'", "''") + "'"


# --- taking turns between processes ------------------------------------------------------


class _Deadline:
    """Time left to wait, and the progress callback, shared by every step of one connect()."""

    def __init__(self, path: Path, timeout_s: float, on_wait: WaitCallback | None) -> None:
        self.path, self.on_wait = path, on_wait
        self.started = time.monotonic()
        self.ends = self.started + timeout_s
        self.delay = 0.02
        self.last_report = 0.0

    def pause(self, holder: str | None, *, sleep: bool = True) -> None:
        """Sleep a little (backing off), report progress, or raise StoreBusyError when time is up."""
        now = time.monotonic()
        waited = now - self.started
        if now >= self.ends:
            who = f" ({holder})" if holder else ""
            raise StoreBusyError(f"{self.path}: the store is busy{who} and did not free up within "
                                 f"{waited:.0f} s; try again, or wait longer with --wait SECONDS")
        if self.on_wait is not None and waited - self.last_report >= 0.5:
            self.last_report = waited
            self.on_wait(waited, holder)
        if sleep:
            time.sleep(min(self.delay, max(self.ends - now, 0)))
            self.delay = min(self.delay * 1.5, 0.25)


def _lock_path(db: Path, suffix: str) -> Path:
    return db.with_name(db.name + suffix)


def holder_of(db: Path) -> str | None:
    """Who holds the store, as the holder wrote it into the lock file (best effort)."""
    try:
        text = _lock_path(db, ".lock").read_text(encoding="utf-8").strip()
        info = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    return f"{str(info.get('label', '?'))[:80]}, pid {info.get('pid', '?')}"


def _try_flock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def _open_lock_file(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:  # a read-only directory: DuckDB's own lock is all there is
        return None


def _take_turn(db: Path, exclusive: bool, deadline: _Deadline) -> int | None:
    """Queue on the turnstile, then take the store's lock file; returns its descriptor."""
    main_fd = _open_lock_file(_lock_path(db, ".lock"))
    if main_fd is None:
        return None
    queue_fd = _open_lock_file(_lock_path(db, ".lock-queue"))
    try:
        if queue_fd is not None:
            while not _try_flock(queue_fd, fcntl.LOCK_EX):
                deadline.pause(holder_of(db))
        while not _try_flock(main_fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH):
            deadline.pause(holder_of(db))
    except BaseException:
        os.close(main_fd)
        raise
    finally:
        if queue_fd is not None:
            os.close(queue_fd)  # closing releases the turnstile
    if exclusive:
        info = json.dumps({"pid": os.getpid(), "label": _WAITING.label}).encode()
        os.ftruncate(main_fd, 0)
        os.pwrite(main_fd, info, 0)
    return main_fd


def _leave_turn(db: Path, main_fd: int | None) -> None:
    if main_fd is None:
        return
    with contextlib.suppress(OSError):  # the next holder overwrites it anyway
        os.ftruncate(main_fd, 0)
    os.close(main_fd)  # closing releases the lock


def _someone_queued(db: Path) -> bool:
    """Is another process (or a thread of ours) queued for the store?"""
    fd = _open_lock_file(_lock_path(db, ".lock-queue"))
    if fd is None:
        return False
    try:
        return not _try_flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _open_duckdb(path: Path, read_only: bool, deadline: _Deadline) -> duckdb.DuckDBPyConnection:
    """DuckDB's own lock still guards against tools that do not use our lock files."""
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if NEWER_FILE_MARKER in str(exc):
                raise NewerStoreFileError(
                    f"{path}: this store file was written by a newer DuckDB than this environment's "
                    f"{duckdb.__version__} (the PostgreSQL extra pins DuckDB 1.4.4). Open it with the default "
                    f"environment (.venv), or move it into PostgreSQL with one command: "
                    f"make move-store FROM={path} TO=postgresql://user@host:port/dbname") from exc
            if not any(marker in str(exc) for marker in LOCK_MARKERS):
                raise
            deadline.pause(holder_of(path))


def _create(path: Path) -> None:
    """A new store is made whole under a temporary name and renamed into place (callers hold the
    exclusive turn): a process killed while creating it leaves no half-made file at `path`."""
    partial = path.with_name(f"{path.name}.creating-{os.getpid()}")
    for leftover in (partial, partial.with_name(partial.name + ".wal")):
        leftover.unlink(missing_ok=True)
    con = duckdb.connect(str(partial))
    try:
        migrate(con)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    partial.with_name(partial.name + ".wal").unlink(missing_ok=True)  # checkpointed: nothing in it
    os.replace(partial, path)


def _log_hold(db: Path, held_s: float, read_only: bool) -> None:
    """With EVALUATOR_LOCK_LOG=FILE, one JSON line per time this process held the store (the
    benchmark reports how long each command kept others out)."""
    log = os.environ.get("EVALUATOR_LOCK_LOG")
    if not log:
        return
    line = json.dumps({"pid": os.getpid(), "label": _WAITING.label, "store": str(db), "held_s": round(held_s, 4),
                       "read_only": read_only})
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


# --- one database instance per process and file ------------------------------------------


class _Instance:
    """The process's one DuckDB instance of a store file, shared by every caller as cursors."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cond = threading.Condition()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.read_only = False
        self.users = 0
        self.opening = False
        self.draining = False  # someone else is queued: let no new caller in, close when idle
        self.lock_fd: int | None = None
        self.opened_at = 0.0
        self.mine = threading.local()  # how many cursors the current thread holds

    def acquire(self, read_only: bool, deadline: _Deadline, upgrade: bool = False) -> duckdb.DuckDBPyConnection:
        held_here = getattr(self.mine, "count", 0)
        while True:
            with self.cond:
                if self.con is not None and (read_only or not self.read_only):
                    # A thread already inside joins at once (else it would wait for itself).
                    if held_here or (not self.draining and not self._queued()):
                        return self._join()
                    self.draining = True
                elif self.con is not None and held_here:
                    raise RuntimeError(f"{self.path}: cannot write while this thread holds the store read-only")
                elif self.con is not None:
                    self.draining = True  # reopen for writing once the readers are done
                elif not self.opening:
                    self.opening = True
                    break
                self.cond.wait(0.1)  # woken as soon as the instance closes or opens
            deadline.pause(holder_of(self.path) if self.con is None else None, sleep=False)
        try:
            con = self._open(read_only, deadline)
            if read_only and upgrade and len(applied_versions(con)) < len(MIGRATIONS):
                # An older store: upgrade it first (once), then it serves readers as well.
                con.close()
                _leave_turn(self.path, self.lock_fd)
                read_only = False
                con = self._open(read_only, deadline)
        except BaseException:
            with self.cond:
                self.opening = False
                self.cond.notify_all()
            raise
        with self.cond:
            self.con, self.read_only, self.opening, self.draining = con, read_only, False, False
            self.opened_at = time.monotonic()
            self.cond.notify_all()
            return self._join()

    def _open(self, read_only: bool, deadline: _Deadline) -> duckdb.DuckDBPyConnection:
        """Take our turn (shared for readers, exclusive for writers), open the file, migrate it."""
        self.lock_fd = _take_turn(self.path, not read_only, deadline)
        try:
            if not read_only and not self.path.exists():
                _create(self.path)
            con = _open_duckdb(self.path, read_only, deadline)
            try:
                if not read_only:
                    migrate(con)
            except BaseException:
                con.close()
                raise
        except BaseException:
            _leave_turn(self.path, self.lock_fd)
            self.lock_fd = None
            raise
        return con

    def _queued(self) -> bool:
        return _someone_queued(self.path)

    def _join(self) -> duckdb.DuckDBPyConnection:
        assert self.con is not None
        self.users += 1
        self.mine.count = getattr(self.mine, "count", 0) + 1
        return self.con.cursor()

    def release(self, cursor: duckdb.DuckDBPyConnection) -> None:
        try:
            cursor.close()
        finally:
            with self.cond:
                self.users -= 1
                self.mine.count = getattr(self.mine, "count", 1) - 1
                if self.users == 0 and self.con is not None:
                    try:
                        self.con.close()
                    finally:
                        self.con = None
                        _leave_turn(self.path, self.lock_fd)
                        _log_hold(self.path, time.monotonic() - self.opened_at, self.read_only)
                        self.lock_fd = None
                        self.draining = False
                        self.cond.notify_all()


_INSTANCES: dict[str, _Instance] = {}
_INSTANCES_LOCK = threading.Lock()


def _instance(path: Path) -> _Instance:
    key = os.path.realpath(path)
    with _INSTANCES_LOCK:
        found = _INSTANCES.get(key)
        if found is None:
            found = _INSTANCES[key] = _Instance(path)
        return found


# How long a PostgreSQL store's instance stays open with no cursor: opening one (the extension
# loaded, the database attached, its catalog read) costs 0.2–0.3 s, and a page run opens the
# store several times; a file's instance closes at once instead (its lock must go to the next writer).
SERVER_IDLE_CLOSE_S = 30.0


class _OpenedInstance:
    """One DuckDB instance (in memory) with the PostgreSQL store attached, and its cursors out."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.users = 0
        self.left = 0.0  # when the last cursor left (time.monotonic)


class _ServerInstance:
    """The process's one DuckDB instance (in memory) with a PostgreSQL store attached, shared by
    every caller as cursors; closed SERVER_IDLE_CLOSE_S after the last one leaves. No turns:
    PostgreSQL's transactions keep this process's writers and other hosts' apart. An instance that
    lost its server (postgres.lost_connection) is retired: later cursors get a fresh one, and it is
    closed when its own last cursor leaves."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lock = threading.Lock()
        self.current: _OpenedInstance | None = None

    def acquire(self, read_only: bool, upgrade: bool) -> tuple[duckdb.DuckDBPyConnection, _OpenedInstance]:
        with self.lock:
            if self.current is None:
                self.current = _OpenedInstance(postgres.open_instance(self.url, quote_literal(self.url)))
            opened = self.current
            opened.users += 1
        try:
            cursor = postgres.use(opened.con.cursor())
            with self.lock:  # migrated once per process (others' migrations: migrate() retries)
                if self.url not in _SERVERS_MIGRATED:
                    versions = applied_versions(cursor)
                    if len(versions) < len(MIGRATIONS):
                        if read_only and not upgrade:
                            if not versions:
                                raise FileNotFoundError(f"{postgres.redacted(self.url)}: no store here yet; "
                                                        "ingest a run first")
                        else:
                            migrate(cursor)
                            _SERVERS_MIGRATED.add(self.url)
                    else:
                        _SERVERS_MIGRATED.add(self.url)
        except BaseException as exc:
            self._leave(opened, exc)
            raise
        return cursor, opened

    def release(self, cursor: duckdb.DuckDBPyConnection, opened: _OpenedInstance,
                failure: BaseException | None = None) -> None:
        try:
            cursor.close()
        finally:
            self._leave(opened, failure)

    def _leave(self, opened: _OpenedInstance, failure: BaseException | None) -> None:
        with self.lock:
            opened.users -= 1
            if failure is not None and self.current is opened and postgres.lost_connection(failure):
                self.current = None
            if opened.users > 0:
                return
            if self.current is not opened:  # retired: nobody else will use it
                opened.con.close()
                return
            opened.left = time.monotonic()
            timer = threading.Timer(SERVER_IDLE_CLOSE_S, self._close_if_idle)
            timer.daemon = True
            timer.start()

    def _close_if_idle(self) -> None:
        with self.lock:
            opened = self.current
            if opened is not None and opened.users == 0 and \
                    time.monotonic() - opened.left >= SERVER_IDLE_CLOSE_S * 0.99:
                try:
                    opened.con.close()
                finally:
                    self.current = None


_SERVERS: dict[str, _ServerInstance] = {}
_SERVERS_MIGRATED: set[str] = set()


def _server_instance(url: str) -> _ServerInstance:
    with _INSTANCES_LOCK:
        found = _SERVERS.get(url)
        if found is None:
            found = _SERVERS[url] = _ServerInstance(url)
        return found


@contextmanager
def connect(
    path: str | os.PathLike[str] | None = None, *, read_only: bool = False, timeout_s: float | None = None,
    on_wait: WaitCallback | None = None, upgrade: bool = False,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of the process's one instance of the store (opened, created and migrated when
    needed); the file is closed when the last cursor is. Waits its turn while another process
    holds the store, reporting through on_wait; StoreBusyError after timeout_s. A read-only open
    leaves an older store as it is, unless `upgrade` (pages, the CLI's reading steps): then it is
    migrated first, once. A PostgreSQL URL opens that database (no turns, no waiting)."""
    found = resolve_db(path)
    if isinstance(found, str):
        server = _server_instance(found)
        server_cursor, opened = server.acquire(read_only, upgrade)
        failure: BaseException | None = None
        try:
            yield server_cursor
        except BaseException as exc:
            failure = exc
            raise
        finally:
            server.release(server_cursor, opened, failure)
        return
    db_path = found
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    elif not db_path.exists():
        raise FileNotFoundError(f"{db_path}: no store here yet; ingest a run first")
    deadline = _Deadline(db_path, default_timeout() if timeout_s is None else timeout_s,
                         on_wait if on_wait is not None else _WAITING.on_wait)
    instance = _instance(db_path)
    cursor = instance.acquire(read_only, deadline, upgrade)
    try:
        yield cursor
    finally:
        instance.release(cursor)


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


def drop_quietly(con: duckdb.DuckDBPyConnection, *, views: tuple[str, ...] = (),
                 temp_tables: tuple[str, ...] = ()) -> None:
    """Unregister ``views`` and drop ``temp_tables`` in a ``finally``. After a failed statement
    DuckDB has aborted the transaction and refuses even these; that refusal must not take the
    place of the error itself (the rollback removes what the transaction made anyway)."""
    for view in views:
        with contextlib.suppress(duckdb.Error):
            con.unregister(view)
    for table in temp_tables:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS temp.{quote_ident(table)}")


@contextmanager
def memory_limited(con: duckdb.DuckDBPyConnection, limit: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB's memory limit for the connection's instance (every cursor of it) while the block
    runs, then DuckDB's default again (nothing else sets one; the setting reads back rounded, so
    it could not be put back exactly). The default, most of the machine's memory, lets DuckDB keep
    every block of a large write cached in the process; under a limit, blocks already written to
    the file are simply dropped."""
    con.execute("SET memory_limit = $limit", {"limit": limit})
    try:
        yield con
    finally:
        con.execute("RESET memory_limit")


def applied_versions(con: duckdb.DuckDBPyConnection) -> list[int]:
    exists = fetch_value(
        con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations' "
             "AND table_catalog = current_database()"
    )
    if not exists:
        return []
    return [row[0] for row in con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()]


def migrate(con: duckdb.DuckDBPyConnection, *, upto: int | None = None) -> list[int]:
    """Apply pending migrations in order, each in its own transaction; return those applied.

    In PostgreSQL, other processes may migrate the same database at once: a migration that fails
    because another applied it first is skipped; one that lost any other race is tried again."""
    server = postgres.is_server_connection(con)
    done = set(applied_versions(con))
    applied = []
    for version, name, sql in MIGRATIONS:
        if version in done or (upto is not None and version > upto):
            continue
        for attempt in range(CONFLICT_RETRIES):
            try:
                with atomic(con):
                    if server:  # storage-only migrations (zstd) mean nothing to PostgreSQL
                        if version not in NEEDS_STORAGE:
                            con.execute(postgres.migration_sql(sql))
                    elif version not in SERVER_ONLY and storage_version(con) >= NEEDS_STORAGE.get(version, (0, 0, 0)):
                        con.execute(sql)
                    con.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($version, $name, now())",
                        {"version": version, "name": name},
                    )
                applied.append(version)
                break
            except duckdb.Error as exc:
                # another process migrating the same database at once: its tables or its row won
                if not server or not (is_conflict(exc) or "already exists" in str(exc)):
                    raise
                con.execute("CALL pg_clear_cache()")  # what the other process made
                if version in applied_versions(con) or attempt == CONFLICT_RETRIES - 1:
                    if version in applied_versions(con):
                        break
                    raise
                time.sleep(0.05 * (attempt + 1))
    return applied


def storage_version(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """The storage format of the store's file ("v1.2.0+" -> (1, 2, 0)); a store in memory has
    every feature of this DuckDB."""
    tags = fetch_value(con, "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()")
    found = (tags or {}).get("storage_version")
    if not found:
        return (999, 0, 0)
    major, minor, patch = ([int(part) for part in found.strip("v+").split(".") if part.isdigit()] + [0, 0, 0])[:3]
    return (major, minor, patch)


def on_server(con: duckdb.DuckDBPyConnection) -> bool:
    """Is the cursor's store in PostgreSQL?"""
    return postgres.is_server_connection(con)


def cursor_of(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Another cursor of `con`'s instance, reading the same store: a new cursor starts in DuckDB's own
    database, so for a PostgreSQL store it is pointed at the attached one (USE is per cursor)."""
    cursor = con.cursor()
    if postgres.is_server_connection(con):
        postgres.use(cursor)
    return cursor


def next_id(con: duckdb.DuckDBPyConnection, sequence: str) -> int:
    """The next value of a sequence: ids are never reused, so links and overrides never point
    at something that replaced what they meant."""
    if postgres.is_server_connection(con):
        return postgres.next_ids(con, sequence, 1)[0]
    return int(fetch_value(con, "SELECT nextval($sequence)", {"sequence": sequence}))


def next_ids(con: duckdb.DuckDBPyConnection, sequence: str, n: int) -> list[int]:
    """The next `n` values of a sequence, in order."""
    if postgres.is_server_connection(con):
        return postgres.next_ids(con, sequence, n)
    return [int(row[0]) for row in con.execute("SELECT nextval($sequence) FROM range($n)",
                                               {"sequence": sequence, "n": n}).fetchall()]


def is_conflict(exc: BaseException) -> bool:
    """A transaction refused because another won a race (DuckDB's write conflict, PostgreSQL's
    serialization failure or unique key): it may simply be tried again."""
    return isinstance(exc, duckdb.TransactionException) or postgres.is_conflict(exc)


def save_once(con: duckdb.DuckDBPyConnection, client_token: str | None, written: Callable[[], list[int]],
              write: Callable[[], list[int]], *, serialize: str | None = None) -> list[int]:
    """One reviewer's save, written exactly once per `client_token`: in one transaction, the ids
    `written` finds for the token (a save retried: returned as they are), else `write`. In
    PostgreSQL the token is claimed in save_tokens first (its primary key: a concurrent save of the
    same token, in any process on any host, fails and is retried here, then finds this one's rows);
    a file's writers take turns, so there `written` is enough. Conflicts are tried
    again. `serialize`: in PostgreSQL, a table locked against other writers first, so values read
    in the transaction (an override's old value) are the latest."""
    for attempt in range(CONFLICT_RETRIES):
        try:
            with SAVE_LOCK, atomic(con):
                if serialize is not None and postgres.is_server_connection(con):
                    postgres.execute(con, f"LOCK TABLE {quote_ident(serialize)} IN SHARE ROW EXCLUSIVE MODE")
                if client_token is not None:
                    found = written()
                    if found:
                        return found
                    if postgres.is_server_connection(con):  # a file's writers already take turns (SAVE_LOCK)
                        con.execute("INSERT INTO save_tokens (client_token, created_at) VALUES ($token, now())",
                                    {"token": client_token})
                return write()
        except duckdb.Error as exc:
            if not is_conflict(exc) or attempt == CONFLICT_RETRIES - 1:
                raise
            time.sleep(0.01 * (attempt + 1))
    raise AssertionError("unreachable")


def db_path_of(con: duckdb.DuckDBPyConnection) -> str | Path:
    """The store a cursor belongs to, as connect() takes it (for steps that open their own windows):
    its file, or its PostgreSQL URL."""
    path, kind = fetch_one(con, "SELECT path, type FROM duckdb_databases() WHERE database_name = current_database()"
                           ) or (None, None)
    return str(path) if kind == "postgres" else Path(str(path))


def fetch_one(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict | None = None) -> tuple | None:
    """First row or None. DuckDB 2 keeps a half-read result open (blocking the connection's
    next call), so read results whole instead of with fetchone()."""
    rows = con.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def fetch_value(con: duckdb.DuckDBPyConnection, sql: str, params: list | dict | None = None) -> Any:
    row = fetch_one(con, sql, params)
    return None if row is None else row[0]


def arrow_reader(relation: duckdb.DuckDBPyRelation, batch_rows: int) -> pa.RecordBatchReader:
    """A relation's rows as Arrow batches of `batch_rows`, read as they are made: `to_arrow_reader`
    on DuckDB 2 (where `fetch_arrow_reader` is deprecated), `fetch_arrow_reader` on DuckDB 1.4 (the
    release whose PostgreSQL extension PyPI has; it lacks the other)."""
    to_reader = getattr(relation, "to_arrow_reader", None)
    if to_reader is not None:
        return to_reader(batch_rows)
    return relation.fetch_arrow_reader(batch_rows)
