"""Shared fixtures: real DuckDB files in temp dirs and the real CLI as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
DATA = ROOT / "data"


def run_cli(*args: str, db: Path | None = None, check: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """`python -m evaluator ARGS` in a subprocess, exactly as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    command = [sys.executable, "-m", "evaluator", *args]
    if db is not None:
        command[4:4] = ["--db", str(db)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}")
    return result


def ingested_store(tmp_path_factory: pytest.TempPathFactory, path: Path, *args: str) -> Path:
    """A new store holding `path` ingested through the real CLI (extra ingest arguments in `args`),
    for module-scoped fixtures of tests that only read it."""
    db = tmp_path_factory.mktemp(path.stem) / "store.duckdb"
    run_cli("ingest", str(path), *args, db=db, check=True)
    return db


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture(scope="session")
def sample_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three sample runs loaded and evaluated once per session (through the real CLI)."""
    path = tmp_path_factory.mktemp("samples") / "samples.duckdb"
    run_cli("load-samples", db=path, check=True)
    return path


@pytest.fixture
def sample_store(sample_store_template: Path, tmp_path: Path) -> Path:
    """A private copy of the sample store, so a test may write to it."""
    path = tmp_path / "samples.duckdb"
    shutil.copy(sample_store_template, path)
    return path


# Columns that record when a row was written: two stores holding the same data differ only there.
TIMESTAMPS = {"ingested_at", "created_at", "applied_at"}


def store_rows(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows as text (timestamps left out), sorted: equal for stores holding the same data."""
    from evaluator.store.db import connect

    out = {}
    with connect(db, read_only=True) as con:
        tables = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1").fetchall()]
        for table in tables:
            columns = [row[0] for row in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $table "
                "ORDER BY ordinal_position", {"table": table}).fetchall() if row[0] not in TIMESTAMPS]
            select = ", ".join(f'"{c}"::VARCHAR' for c in columns)
            out[table] = sorted(con.execute(f'SELECT {select} FROM "{table}"').fetchall(), key=repr)
    return out


# Another process that holds the store for writing (as a CLI command does, with its label) until
# released: pages, saves and the CLI must wait for it.
HOLDER = """
import sys
sys.path.insert(0, sys.argv[2])
from evaluator.store.db import connect, set_waiting
set_waiting(label=sys.argv[3])
with connect(sys.argv[1]) as con:
    print("held", flush=True)
    sys.stdin.readline()
"""


class StoreHolder:
    def __init__(self, db: Path, label: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(ROOT), label],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline().strip() == "held"

    def release(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("go\n")
            self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0


@pytest.fixture
def hold_store():  # type: ignore[no-untyped-def]
    """hold_store(db, label="evaluator recompute") -> a StoreHolder; released at the latest after the test."""
    holders: list[StoreHolder] = []

    def hold(db: Path, label: str = "evaluator recompute") -> StoreHolder:
        holders.append(StoreHolder(db, label))
        return holders[-1]

    yield hold
    for holder in holders:
        holder.release()
