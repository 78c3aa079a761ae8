"""evaluator.store.staging: what a snapshot copies out of the store."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

from evaluator.store.db import connect
from evaluator.store.staging import (
    MAKING,
    MAKING_ABANDONED_AFTER_S,
    OWNER_LOCK,
    OwnedFolder,
    remove_abandoned,
    snapshot_run,
    staging_area,
)


def _run_id(con, name):  # type: ignore[no-untyped-def]
    return con.execute("SELECT run_id FROM runs WHERE name = $n", {"n": name}).fetchall()[0][0]


def test_a_snapshot_of_some_responses_copies_them_what_they_retrieved_and_every_question(sample_store):
    with staging_area(sample_store) as stage:
        with connect(sample_store, read_only=True) as con:
            run_id = _run_id(con, "clearpath")
            some = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = $run "
                                              "ORDER BY response_id DESC LIMIT 3", {"run": run_id}).fetchall()]
            want_retrieved = con.execute("SELECT * FROM retrieved WHERE list_contains($ids, response_id) ORDER BY ALL",
                                         {"ids": some}).fetchall()
            want_chunks = con.execute("SELECT * FROM chunks WHERE chunk_key IN (SELECT chunk_key FROM retrieved "
                                      "WHERE list_contains($ids, response_id)) ORDER BY ALL", {"ids": some}).fetchall()
            want_questions = con.execute("SELECT * FROM questions WHERE run_id = $run ORDER BY ALL",
                                         {"run": run_id}).fetchall()
            snapshot_run(con, run_id, stage, responses=some)
        scon = stage.connect()
        try:
            copied = scon.execute("SELECT response_id FROM responses ORDER BY 1").fetchall()
            assert [r[0] for r in copied] == sorted(some)
            assert scon.execute("SELECT * FROM retrieved ORDER BY ALL").fetchall() == want_retrieved
            assert scon.execute("SELECT * FROM chunks ORDER BY ALL").fetchall() == want_chunks
            assert scon.execute("SELECT * FROM questions ORDER BY ALL").fetchall() == want_questions
            assert scon.execute("SELECT run_id FROM runs").fetchall() == [(run_id,)]
        finally:
            scon.close()


def test_a_snapshot_of_no_responses_copies_none(sample_store):
    with staging_area(sample_store) as stage:
        with connect(sample_store, read_only=True) as con:
            snapshot_run(con, _run_id(con, "clearpath"), stage, responses=[])
        scon = stage.connect()
        try:
            assert scon.execute("SELECT count(*) FROM responses").fetchone() == (0,)
            assert scon.execute("SELECT count(*) FROM retrieved").fetchone() == (0,)
        finally:
            scon.close()


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def _owner_lock_is_held(folder: Path) -> bool:
    fd = os.open(folder / OWNER_LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_an_owned_folder_holds_its_lock_until_it_is_removed(tmp_path: Path) -> None:
    owned = OwnedFolder(tmp_path)
    folder = Path(owned.name)
    assert folder.name.startswith(f"{os.getpid()}-")
    assert sorted(entry.name for entry in folder.iterdir()) == [OWNER_LOCK]  # no half-made lock file left
    assert _owner_lock_is_held(folder)
    owned.cleanup()
    assert not folder.exists()


HOLD_LOCK = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.flock(fd, fcntl.LOCK_EX); "
             "print('locked', flush=True); sys.stdin.read()")


def test_a_live_folder_is_kept_even_when_its_pid_means_nothing_here(tmp_path: Path) -> None:
    """Another container's command shares the store's disk: its pid is not alive here, its lock is held."""
    theirs = tmp_path / f"{_dead_pid()}-theirs"
    theirs.mkdir()
    (theirs / OWNER_LOCK).touch()
    owner = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(theirs / OWNER_LOCK)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None and owner.stdout.readline() == "locked\n"
        remove_abandoned(tmp_path)
        assert theirs.exists()
    finally:
        owner.kill()
        owner.wait()
    remove_abandoned(tmp_path)  # its owner is gone: the lock is free
    assert not theirs.exists()


def test_an_abandoned_folder_is_removed_even_when_its_pid_was_given_to_another_process(tmp_path: Path) -> None:
    reused = tmp_path / f"{os.getppid()}-killed"  # a live pid, but no process holds the folder's lock
    reused.mkdir()
    (reused / OWNER_LOCK).touch()
    (reused / "stage.duckdb").write_bytes(b"x")
    remove_abandoned(tmp_path)
    assert not reused.exists()


def test_a_folder_without_an_owner_lock_is_judged_by_its_pid(tmp_path: Path) -> None:
    """One being made (its lock not in place yet) or made by an older version."""
    dead, alive = tmp_path / f"{_dead_pid()}-old", tmp_path / f"{os.getppid()}-making"
    for folder in (dead, alive):
        folder.mkdir()
    remove_abandoned(tmp_path)
    assert not dead.exists() and alive.exists()


def test_my_own_live_folders_are_kept(tmp_path: Path) -> None:
    owned = OwnedFolder(tmp_path)
    remove_abandoned(tmp_path)
    assert Path(owned.name).exists()
    owned.cleanup()


def test_a_forked_worker_letting_go_of_the_folder_leaves_it_to_its_parent(tmp_path: Path) -> None:
    owned = OwnedFolder(tmp_path)
    child = os.fork()
    if child == 0:  # the worker: drops its copy (as at its end) and leaves without Python's clean-up
        owned.cleanup()
        os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert Path(owned.name).exists() and _owner_lock_is_held(Path(owned.name))
    owned.cleanup()
    assert not Path(owned.name).exists()


def test_a_folder_being_made_is_kept_while_its_lock_is_held_or_it_is_recent(tmp_path: Path) -> None:
    locked, recent, old = (tmp_path / f"{MAKING}{name}" for name in ("locked", "recent", "old"))
    for folder in (locked, recent, old):
        folder.mkdir()
    (locked / OWNER_LOCK).touch()
    fd = os.open(locked / OWNER_LOCK, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    long_ago = time.time() - MAKING_ABANDONED_AFTER_S - 60
    os.utime(old, (long_ago, long_ago))  # a command killed between making it and taking its lock
    try:
        remove_abandoned(tmp_path)
        assert locked.exists() and recent.exists() and not old.exists()
    finally:
        os.close(fd)
    remove_abandoned(tmp_path)  # its lock is free now
    assert not locked.exists() and recent.exists()
