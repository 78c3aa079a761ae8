"""Storing a prepared run (store_run, the CLI's path, and ingest_file on an open store): one
transaction, whole or nothing; the run's batches kept beside the store are removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.ingest.loader import DuplicateRunError, ingest_file, prepare_run, store_run
from evaluator.review.config import ReviewConfig
from evaluator.review.overrides import add_override
from evaluator.store.db import connect, fetch_value
from tests.conftest import store_rows

ROOT = Path(__file__).resolve().parents[3]
FILES = [ROOT / "data" / "ramayana_golden.csv", ROOT / "data" / "ramayana_v2.jsonl",
         ROOT / "data" / "clearpath_support.jsonl", ROOT / "tests" / "fixtures" / "hostile_run.jsonl",
         ROOT / "tests" / "fixtures" / "formats" / "inspectorraget_clapnq.json"]  # labels and annotations


def test_staged_replace_moves_overrides_like_a_direct_replace(tmp_path: Path) -> None:
    source = ROOT / "data" / "clearpath_support.jsonl"
    changed = tmp_path / "clearpath_support.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()
    changed.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one response fewer
    dumps = []
    for name in ("direct", "staged"):
        db = tmp_path / f"{name}.duckdb"
        store_run(db, prepare_run(source, name="cp"))
        with connect(db) as con:
            rid = fetch_value(con, "SELECT min(response_id) FROM responses")
            add_override(con, rid, "overall", "FAIL", "wrong", "qa", config=ReviewConfig())
        if name == "direct":
            with connect(db) as con:
                ingest_file(con, changed, name="cp", replace=True)
        else:
            store_run(db, prepare_run(changed, name="cp"), replace=True)
        dumps.append(store_rows(db))
    assert dumps[0] == dumps[1]
    assert len(dumps[1]["overrides"]) == 1


def test_a_staged_duplicate_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    source = ROOT / "data" / "clearpath_support.jsonl"
    store_run(db, prepare_run(source))
    before = store_rows(db)
    with pytest.raises(DuplicateRunError, match="already exists"):
        store_run(db, prepare_run(source))
    assert store_rows(db) == before


def test_the_cli_removes_the_runs_batches_kept_beside_the_store(tmp_path: Path, cli) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(FILES[1]), db=db, check=True)
    assert not (tmp_path / "store.duckdb.staging").exists()


def test_the_cli_removes_the_batches_of_bad_input_kept_beside_the_store(tmp_path: Path, cli) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q1", "provider": "p", "answer": "a"}\n', encoding="utf-8")
    db = tmp_path / "store.duckdb"
    cli("ingest", str(FILES[1]), db=db, check=True)
    result = cli("ingest", str(bad), db=db)
    assert result.returncode != 0 and "field 'question'" in result.stderr
    assert not (tmp_path / "store.duckdb.staging").exists()


def test_duckdbs_memory_while_storing_grows_with_its_threads(tmp_path: Path) -> None:
    from evaluator.ingest.loader import _memory_limit

    with connect(tmp_path / "store.duckdb") as con:
        con.execute("SET threads = 2")
        assert _memory_limit(con) == "500MB"
        con.execute("SET threads = 32")
        assert _memory_limit(con) == "2048MB"
        con.execute("RESET threads")
