"""The store (DESIGN "Store"): where it lives, transactions, identifier quoting, waiting for the file lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from evaluator.store.db import (
    DEFAULT_DB,
    StoreBusyError,
    atomic,
    connect,
    fetch_value,
    quote_ident,
    resolve_db_path,
)

# Another process that opens the store for writing, says "held", waits until it is told to
# go on (a line on stdin) or for --hold seconds, writes a marker row and closes.
HOLDER = textwrap.dedent(
    """
    import sys, time, duckdb
    path, hold = sys.argv[1], float(sys.argv[2])
    con = duckdb.connect(path)
    print("held", flush=True)
    if hold < 0:
        sys.stdin.readline()
    else:
        time.sleep(hold)
    con.execute("CREATE TABLE IF NOT EXISTS holder_marker (v INTEGER)")
    con.execute("INSERT INTO holder_marker VALUES (42)")
    con.close()
    """
)


@contextmanager
def held_by_other_process(path: Path, hold_s: float) -> Iterator[subprocess.Popen]:
    """A second process holding the store's write lock: for hold_s seconds, or (hold_s < 0)
    until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(hold_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline().strip()
        assert ready == "held", process.stderr.read() if process.stderr else ready
        yield process
    finally:
        if process.poll() is None and process.stdin is not None:
            process.stdin.write("go\n")
            process.stdin.flush()
        process.wait(timeout=30)
        assert process.returncode == 0


# resolve_db_path


def test_resolve_db_path_prefers_the_argument_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALUATOR_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path(str(tmp_path / "arg.duckdb")) == tmp_path / "arg.duckdb"


def test_resolve_db_path_uses_the_environment_without_an_argument(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALUATOR_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path(None) == tmp_path / "env.duckdb"


def test_resolve_db_path_defaults_to_data_evaluator_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALUATOR_DB", raising=False)
    assert resolve_db_path(None) == Path("data") / "evaluator.duckdb" == DEFAULT_DB


def test_connect_opens_the_resolved_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVALUATOR_DB", str(tmp_path / "env.duckdb"))
    with connect() as con:
        con.execute("SELECT 1").fetchall()
    assert (tmp_path / "env.duckdb").exists()


# atomic


def test_atomic_commits_when_the_block_succeeds(db_path: Path) -> None:
    with connect(db_path) as con:
        con.execute("CREATE TABLE t (v INTEGER)")
        with atomic(con):
            con.execute("INSERT INTO t VALUES (1), (2)")
    with connect(db_path, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM t") == 2


def test_atomic_rolls_back_and_reraises_on_an_exception(db_path: Path) -> None:
    with connect(db_path) as con:
        con.execute("CREATE TABLE t (v INTEGER)")
        with pytest.raises(ValueError, match="boom"), atomic(con):
            con.execute("INSERT INTO t VALUES (1), (2)")
            raise ValueError("boom")
        assert fetch_value(con, "SELECT count(*) FROM t") == 0
        # The connection is usable afterwards: no transaction is left open.
        with atomic(con):
            con.execute("INSERT INTO t VALUES (3)")
    with connect(db_path, read_only=True) as con:
        assert con.execute("SELECT v FROM t").fetchall() == [(3,)]


def test_atomic_rolls_back_when_a_statement_fails(db_path: Path) -> None:
    with connect(db_path) as con:
        con.execute("CREATE TABLE t (v INTEGER PRIMARY KEY)")
        with pytest.raises(duckdb.ConstraintException), atomic(con):
            con.execute("INSERT INTO t VALUES (1)")
            con.execute("INSERT INTO t VALUES (1)")
        assert fetch_value(con, "SELECT count(*) FROM t") == 0


# quote_ident


@pytest.mark.parametrize(
    ("name", "quoted"),
    [("runs", '"runs"'), ('a"b', '"a""b"'), ("two words", '"two words"'), ('"', '""""')],
)
def test_quote_ident_wraps_in_double_quotes_and_doubles_inner_quotes(name: str, quoted: str) -> None:
    assert quote_ident(name) == quoted


def test_quote_ident_round_trips_an_awkward_name_through_duckdb(db_path: Path) -> None:
    name = 'we"ird; DROP TABLE runs; --'
    with connect(db_path) as con:
        con.execute(f"CREATE TABLE {quote_ident(name)} ({quote_ident('select')} INTEGER)")
        con.execute(f"INSERT INTO {quote_ident(name)} VALUES (7)")
        assert fetch_value(con, f"SELECT {quote_ident('select')} FROM {quote_ident(name)}") == 7
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0
        tables = {
            row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
    assert name in tables


# connect and the file lock


def test_connect_waits_for_another_process_to_release_the_store(db_path: Path) -> None:
    with connect(db_path):
        pass  # create and migrate the store first
    with held_by_other_process(db_path, hold_s=1.0), connect(db_path, timeout_s=30) as con:
        # We only got in after the holder wrote its marker and closed.
        assert con.execute("SELECT v FROM holder_marker").fetchall() == [(42,)]


def test_connect_read_only_also_waits_for_a_writer_in_another_process(db_path: Path) -> None:
    with connect(db_path):
        pass
    with held_by_other_process(db_path, hold_s=1.0), connect(db_path, read_only=True, timeout_s=30) as con:
        assert con.execute("SELECT v FROM holder_marker").fetchall() == [(42,)]


def test_connect_raises_store_busy_after_its_timeout(db_path: Path) -> None:
    with connect(db_path):
        pass
    with (
        held_by_other_process(db_path, hold_s=-1),
        pytest.raises(StoreBusyError, match="busy"),
        connect(db_path, timeout_s=0.5),
    ):
        pass


def test_connect_read_only_refuses_a_missing_store_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.duckdb"
    with pytest.raises(FileNotFoundError), connect(path, read_only=True):
        pass
    assert not path.exists()


def test_connect_creates_the_parent_directory_of_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "store.duckdb"
    with connect(path) as con:
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0
    assert path.exists()


def test_a_process_killed_while_creating_the_store_leaves_no_half_made_store(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    # Killed (SIGKILL) in the middle of creating the store: after the file exists, mid-migration.
    script = textwrap.dedent(
        """
        import os, signal, sys
        import evaluator.store.db as store
        def die(con, *args, **kwargs):
            con.execute("CREATE TABLE half_made (v INTEGER)")
            os.kill(os.getpid(), signal.SIGKILL)
        store.migrate = die
        with store.connect(sys.argv[1]):
            pass
        """
    )
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run([sys.executable, "-c", script, str(path)], cwd=root, capture_output=True, text=True,
                            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == -9, result.stderr
    assert not path.exists()
    with connect(path) as con:
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0


# memory_limited


def test_memory_limited_sets_the_limit_for_the_block_and_then_duckdbs_default(db_path: Path) -> None:
    from evaluator.store.db import memory_limited

    default = duckdb.connect().execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    with connect(db_path) as con:
        with memory_limited(con, "500MB"):
            assert fetch_value(con, "SELECT current_setting('memory_limit')") == "476.8 MiB"  # 500 MB
        assert fetch_value(con, "SELECT current_setting('memory_limit')") == default
