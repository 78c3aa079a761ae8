"""`evaluator search-index` through the real CLI: build, rebuild, drop, and what replacing a run does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from evaluator.queries.triage import TriageFilters, page_and_count

ROOT = Path(__file__).resolve().parents[3]


def value(db: Path, sql: str, params: list | None = None):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()[0][0]


def search(db: Path, run: str, text: str) -> list[int]:
    with duckdb.connect(str(db), read_only=True) as con:
        evaluation = con.execute("SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                                 "WHERE name = ?", [run]).fetchall()[0][0]
        _, _, rows = page_and_count(con, TriageFilters(evaluation_id=evaluation, text=text), 1, page_size=1000)
    return [row["response_id"] for row in rows]


def test_builds_the_index_and_says_how_big_it_is(cli, sample_store):
    result = cli("search-index", "--run", "clearpath", "--json", db=sample_store, check=True)
    summary = json.loads(result.stdout)
    assert summary["run"] == "clearpath" and summary["responses"] == 32
    assert summary["words"] == value(sample_store, "SELECT count(*) FROM search_vocab JOIN runs USING (run_id) "
                                                   "WHERE name = 'clearpath'")
    assert summary["postings"] == value(sample_store, "SELECT count(*) FROM search_words JOIN runs USING (run_id) "
                                                      "WHERE name = 'clearpath'")
    text = cli("search-index", "--run", "clearpath", db=sample_store, check=True).stdout
    assert text.startswith("search index of clearpath: 32 responses, ")


def test_searches_find_the_same_responses_with_and_without_the_index(cli, sample_store):
    searches = ["Rama", "shloka", "didn\u2019t", "the ", "Lanka.", "xyzzy", "of the", "R\u0101ma"]
    with_index = {text: search(sample_store, "ramayana", text) for text in searches}
    cli("search-index", "--run", "ramayana", "--drop", db=sample_store, check=True)
    assert value(sample_store, "SELECT count(*) FROM search_indexes JOIN runs USING (run_id) "
                               "WHERE name = 'ramayana'") == 0
    assert {text: search(sample_store, "ramayana", text) for text in searches} == with_index
    assert with_index["Rama"] and with_index["shloka"] and not with_index["xyzzy"]


def test_an_unknown_run_is_an_error_naming_the_runs(cli, sample_store):
    result = cli("search-index", "--run", "nope", db=sample_store)
    assert result.returncode == 2
    assert "no run named 'nope'" in result.stderr and "ramayana" in result.stderr


def test_replacing_a_run_removes_its_index(cli, tmp_path):
    db = tmp_path / "store.duckdb"
    source = tmp_path / "clearpath.jsonl"
    shutil.copy(ROOT / "data" / "clearpath_support.jsonl", source)
    cli("ingest", str(source), "--name", "cp", db=db, check=True)
    cli("search-index", "--run", "cp", db=db, check=True)
    assert value(db, "SELECT count(*) FROM search_words") > 0
    cli("ingest", str(source), "--name", "cp", "--replace", db=db, check=True)
    for table in ("search_words", "search_vocab", "search_indexes"):
        assert value(db, f"SELECT count(*) FROM {table}") == 0, table
