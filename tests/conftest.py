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
