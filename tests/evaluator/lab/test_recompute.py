"""evaluator.lab.recompute: a recompute from the browser reports its progress in the caller's thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from evaluator.ingest.loader import ingest_file
from evaluator.lab.recompute import recompute_with_progress
from evaluator.rules.load import load_rules
from evaluator.store.db import connect, fetch_value

ROOT = Path(__file__).resolve().parents[3]


def test_progress_reaches_the_caller_in_its_own_thread_and_ends_whole(db_path: Path) -> None:
    with connect(db_path) as con:
        ingest_file(con, ROOT / "data" / "ramayana_v2.jsonl", name="v2")
    calls: list[tuple[float, threading.Thread]] = []
    result = recompute_with_progress(db_path, "v2", "refined", load_rules(),
                                     lambda share: calls.append((share, threading.current_thread())))
    assert {thread for _, thread in calls} == {threading.current_thread()}
    shares = [share for share, _ in calls]
    assert shares[0] == 0.0 and shares[-1] == 1.0 and shares == sorted(shares)
    with connect(db_path, read_only=True) as con:
        assert fetch_value(con, "SELECT ruleset FROM evaluations WHERE evaluation_id = $e",
                           {"e": result.evaluation_id}) == "refined"


def test_an_error_of_the_recompute_is_raised_in_the_callers_thread(db_path: Path) -> None:
    with connect(db_path) as con:
        ingest_file(con, ROOT / "data" / "ramayana_v2.jsonl", name="v2")
    with pytest.raises(Exception, match="no_such_run"):
        recompute_with_progress(db_path, "no_such_run", "refined", load_rules(), lambda share: None)
