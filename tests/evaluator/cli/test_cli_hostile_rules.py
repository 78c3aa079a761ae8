"""Issue 29: rules patterns are RE2, so a pattern that backtracks for minutes under Python's `re`
recomputes a run with a 10,000-character answer through the real CLI, in both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.store.db import connect

HOSTILE = [r"\w+\s*\w+!", r".*a.*b", r"\s*,\s*$"]


@pytest.fixture(scope="module")
def long_answer_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import run_cli

    folder = tmp_path_factory.mktemp("hostile_rules")
    run = folder / "long.jsonl"
    record = {"question_id": "q1", "provider": "bot", "question": "What is the scope?", "answer": "a " * 5_000,
              "retrieved": [{"id": "c1", "text": "The scope of the text.", "score": 0.9}]}
    run.write_text(json.dumps(record) + "\n", encoding="utf-8")
    db = folder / "store.duckdb"
    run_cli("ingest", str(run), "--name", "long", db=db, check=True)
    return db


@pytest.mark.parametrize("engine", ["python", "sql"])
def test_patterns_that_backtrack_in_python_recompute_a_long_answer(long_answer_store: Path, tmp_path: Path,
                                                                   cli, engine: str) -> None:
    rules = tmp_path / "hostile.toml"
    patterns = ", ".join(f"'''{p}'''" for p in HOSTILE)
    rules.write_text(f"[answers]\nrefusal_patterns = [{patterns}]\n", encoding="utf-8")
    result = cli("recompute", "--run", "long", "--ruleset", "t3_aware", "--rules", str(rules), "--engine", engine,
                 "--json", db=long_answer_store)
    assert result.returncode == 0, result.stderr
    evaluation = json.loads(result.stdout)["evaluation_id"]
    with connect(long_answer_store, read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM response_results WHERE evaluation_id = $e",
                             {"e": evaluation}).fetchone()
    assert stored == (1,)
