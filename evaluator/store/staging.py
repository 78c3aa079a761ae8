"""Staging: a private DuckDB file where a command does its heavy work without holding the store.

A command that writes to the store in bulk (recompute, metrics, search-index) works in three
steps, so reviewers are kept waiting only for the two short ones:

1. *read window* — the store is open just long enough to copy the rows the work needs into the
   staging file (`snapshot_run`), in DuckDB, without going through Python;
2. the work — evaluating, judging, indexing — reads and writes only the staging file;
3. *write window* — the store is open again for one transaction that appends the results from
   the staging file (`attached`).

The SQL engines of recompute and metrics skip the copy: their queries read the store in read
windows (recompute: one per 200k responses), and only the rows Python must decide are copied
(``snapshot_run(responses=...)``).

The staging file has the store's own schema (the same migrations), so the pipeline's SQL runs
unchanged against either. It lives beside the store (`STORE.staging/<pid>-…/`, an OwnedFolder), is
removed when the command ends, and what a killed command left behind is removed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from evaluator.store.db import drop_quietly, is_server, migrate, quote_ident, quote_literal, resolve_db_path

# Tables a run is made of, and the SQL that selects one run's rows of each ($run: its run_id).
# Rows go in in response order: the work reads them back in ranges of response ids, which
# DuckDB answers from the zone maps only when the table is stored in that order.
RUN_TABLES = {
    "runs": "SELECT * FROM runs WHERE run_id = $run",
    "questions": "SELECT * FROM questions WHERE run_id = $run",
    "responses": "SELECT * FROM responses WHERE run_id = $run ORDER BY response_id",
    "retrieved": """SELECT * FROM retrieved
                    WHERE response_id IN (SELECT response_id FROM responses WHERE run_id = $run)
                    ORDER BY response_id, rank""",
    "chunks": """SELECT * FROM chunks WHERE chunk_key IN (
                     SELECT rt.chunk_key FROM retrieved rt JOIN responses r USING (response_id)
                     WHERE r.run_id = $run)""",
}


# The same for some of a run's responses only ({ids}: a relation of their response_ids).
SOME_RESPONSES_TABLES = {
    "runs": RUN_TABLES["runs"],
    "questions": RUN_TABLES["questions"],
    "responses": """SELECT * FROM responses WHERE run_id = $run AND response_id IN (SELECT response_id FROM {ids})
                    ORDER BY response_id""",
    "retrieved": """SELECT * FROM retrieved
                    WHERE response_id IN (SELECT response_id FROM responses
                                          WHERE run_id = $run AND response_id IN (SELECT response_id FROM {ids}))
                    ORDER BY response_id, rank""",
    "chunks": """SELECT * FROM chunks WHERE chunk_key IN (
                     SELECT rt.chunk_key FROM retrieved rt JOIN responses r USING (response_id)
                     WHERE r.run_id = $run AND r.response_id IN (SELECT response_id FROM {ids}))""",
}


class RunChangedError(RuntimeError):
    """The run was replaced or removed between reading it and writing what was computed from it;
    nothing was written."""


def run_version(con: duckdb.DuckDBPyConnection, run_id: int) -> tuple | None:
    """What tells one version of a run from another (its content hash; None once it is removed):
    read in the read window, compared in the write window (``require_same_run``)."""
    return con.execute("SELECT content_hash FROM runs WHERE run_id = $run", {"run": run_id}).fetchone()


def require_same_run(con: duckdb.DuckDBPyConnection, run_id: int, version: tuple | None, run_name: str,
                     doing: str) -> None:
    """Raise RunChangedError unless run ``run_id`` is still the ``version`` read (``doing``: what
    was done meanwhile, for the message: "while its metrics were computed")."""
    if run_version(con, run_id) != version:
        raise RunChangedError(f"run {run_name!r} was replaced or removed {doing}; nothing was written: "
                              "run the command again")


@dataclass(frozen=True)
class Stage:
    path: Path

    def connect(self) -> duckdb.DuckDBPyConnection:
        """The staging file's own instance. This file is private to one command (not the store:
        no one else opens it), so it needs no turns; it is never open while it is attached."""
        return duckdb.connect(str(self.path))


# The file in a command's folder that the command holds an exclusive flock on while it lives: the
# kernel lets go of it when the process ends, however it ends. A pid alone cannot tell a live
# folder from an abandoned one when the store's disk is shared by another container on the same
# machine (whose pids mean nothing here) or when the dead command's pid was given to another
# process since. (Across machines, flock is only as good as the file system's: NFS with local
# locks or a VM share without lock forwarding cannot tell.)
OWNER_LOCK = ".owner"
MAKING = ".new-"  # a folder being made: renamed to "<pid>-…" once its lock is in place
MAKING_ABANDONED_AFTER_S = 3600.0  # a command killed between making the folder and locking it


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_gone(entry: Path) -> bool | None:
    """Whether no live process holds the folder's owner lock; None when it has none (or it cannot
    be told: the folder is then left alone)."""
    try:
        fd = os.open(entry / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # taken: no live process holds it
        return True
    except OSError:  # held (EWOULDBLOCK), or a file system without flock: leave it be
        return False
    finally:
        os.close(fd)


def _abandoned(entry: Path) -> bool:
    if entry.name.startswith(MAKING):
        gone = _owner_gone(entry)
        if gone is not None:
            return gone
        with contextlib.suppress(OSError):
            return time.time() - entry.stat().st_mtime > MAKING_ABANDONED_AFTER_S
        return False
    pid_text = entry.name.split("-", 1)[0]
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    gone = _owner_gone(entry)
    if gone is None:  # made by an older version: by its pid
        return not _pid_alive(int(pid_text))
    return gone


def remove_abandoned(folder: Path) -> None:
    """Folders in `folder` left by commands that were killed (named "<pid>-..." or being made,
    their owner lock free; without one, their pid gone)."""
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.is_dir() and _abandoned(entry):
            shutil.rmtree(entry, ignore_errors=True)


class OwnedFolder:
    """A fresh folder "<pid>-..." in `parent`, locked as its command's (OWNER_LOCK) until
    ``cleanup()`` (or the last reference to it) removes it; the folders there of killed commands
    are removed first. It is made under another name, its lock made and taken inside, and only
    then renamed into place: no one ever sees a "<pid>-..." folder without its lock held, nor
    OWNER_LOCK unlocked while its owner lives."""

    def __init__(self, parent: Path) -> None:
        remove_abandoned(parent)
        making = ""
        fd = -1
        try:
            for attempt in range(3):
                try:
                    making = tempfile.mkdtemp(prefix=MAKING, dir=parent)
                    break
                except FileNotFoundError:  # another command removed the (empty) parent just now
                    if attempt == 2:
                        raise
                    parent.mkdir(parents=True, exist_ok=True)
            lock_tmp = Path(making) / f"{OWNER_LOCK}-{uuid.uuid4().hex}"
            fd = os.open(lock_tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.replace(lock_tmp, Path(making) / OWNER_LOCK)
            self.name = str(parent / f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
            os.rename(making, self.name)
            making = self.name
            self._finalizer = weakref.finalize(self, _remove_owned, self.name, fd, os.getpid())
        except BaseException:
            if fd >= 0:
                os.close(fd)
            if making:
                shutil.rmtree(making, ignore_errors=True)
            raise

    def cleanup(self) -> None:
        self._finalizer()


def _remove_owned(name: str, fd: int, owner_pid: int) -> None:
    if os.getpid() != owner_pid:  # a forked worker letting go of its copy: the folder is its parent's
        os.close(fd)
        return
    try:
        shutil.rmtree(name, ignore_errors=True)
    finally:
        os.close(fd)  # the folder is gone before its lock is let go


def staging_folder(db: str | os.PathLike[str] | None) -> Path:
    """The folder next to the store where commands stage what they write (one folder each). A store
    in PostgreSQL has no folder (nothing is written beside it): its commands stage in a folder of
    this user's in the system's temporary folder."""
    if is_server(db):
        private = Path(tempfile.gettempdir()) / f"evaluator-staging-{os.getuid() if hasattr(os, 'getuid') else 0}"
        private.mkdir(mode=0o700, exist_ok=True)
        return private
    store_path = resolve_db_path(db)
    return store_path.with_name(store_path.name + ".staging")


@contextmanager
def staging_area(db: str | os.PathLike[str] | None) -> Iterator[Stage]:
    """A fresh staging file with the store's schema, removed afterwards whatever happens."""
    parent = staging_folder(db)
    parent.mkdir(parents=True, exist_ok=True)
    owned = OwnedFolder(parent)
    folder = Path(owned.name)
    try:
        stage = Stage(folder / "stage.duckdb")
        con = stage.connect()
        try:
            migrate(con)
        finally:
            con.close()
        yield stage
    finally:
        owned.cleanup()
        with contextlib.suppress(OSError):
            parent.rmdir()  # only when empty


def _attach(con: duckdb.DuckDBPyConnection, stage: Stage, *, read_only: bool) -> str:
    """Attach the staging file under a fresh alias (quoted, ready to use). Explicit mode: an
    instance opened read-only would otherwise attach read-only too."""
    alias = quote_ident(f"stage_{uuid.uuid4().hex[:12]}")
    con.execute(f"ATTACH {quote_literal(str(stage.path))} AS {alias} ({'READ_ONLY' if read_only else 'READ_WRITE'})")
    return alias


@contextmanager
def attached(con: duckdb.DuckDBPyConnection, stage: Stage, *, read_only: bool = False) -> Iterator[str]:
    """The staging file attached to the store's instance under a fresh alias (quoted, ready to use)."""
    alias = _attach(con, stage, read_only=read_only)
    try:
        yield alias
    finally:
        con.execute(f"DETACH {alias}")


def snapshot_run(con: duckdb.DuckDBPyConnection, run_id: int, stage: Stage, *,
                 tables: tuple[str, ...] = tuple(RUN_TABLES), extra: dict[str, tuple[str, dict]] | None = None,
                 responses: Sequence[int] | None = None) -> None:
    """Copy one run's `tables` (default: all of it; with `responses`, only those responses and
    what they retrieved, with all the run's questions), and any `extra` table (name -> (SELECT,
    parameters)), into the staging file."""
    ids = f"snapshot_ids_{uuid.uuid4().hex[:12]}"
    if responses is not None:
        con.register(ids, pa.table({"response_id": pa.array([int(i) for i in responses], pa.int64())}))
    try:
        with attached(con, stage) as alias:
            for table in tables:
                select = RUN_TABLES[table] if responses is None else SOME_RESPONSES_TABLES[table].format(ids=ids)
                con.execute(f"INSERT INTO {alias}.{quote_ident(table)} {select}", {"run": run_id})
            for table, (select, params) in (extra or {}).items():
                con.execute(f"INSERT INTO {alias}.{quote_ident(table)} {select}", params)
    finally:
        if responses is not None:
            drop_quietly(con, views=(ids,))


def copy_back(con: duckdb.DuckDBPyConnection, alias: str, table: str, where: str = "true",
              params: dict | None = None, replace: dict[str, str] | None = None) -> None:
    """Append the staging file's rows of `table` that match `where` to the store's table, with the
    columns of `replace` computed by the given SQL expressions (over the staged row, with named
    parameters from `params`): ids from the store's sequences replace the staging file's. Callers
    hold the transaction; both tables have the same columns, from the same migrations."""
    columns = ", ".join(f"{expression} AS {quote_ident(name)}" for name, expression in (replace or {}).items())
    select = f"* REPLACE ({columns})" if columns else "*"
    sql = f"INSERT INTO {quote_ident(table)} SELECT {select} FROM {alias}.{quote_ident(table)} WHERE {where}"
    # DuckDB refuses parameters a statement does not use: bind only those it names.
    con.execute(sql, {name: value for name, value in (params or {}).items() if re.search(rf"\${name}\b", sql)})
