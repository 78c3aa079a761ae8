"""Before/after on a run without templates: the `refined` proper-noun rule set beside `t3_aware`,
shown side by side like the T3 fix (issue 13 §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

PAGE = Path(__file__).resolve().parents[2] / "pages" / "before_after.py"


@pytest.fixture
def refined_store(db_path: Path, tmp_path: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    """A template-less run whose answers start sentences with 'Then' and 'The', under both rule sets."""
    run = tmp_path / "history.jsonl"
    context = [{"id": "d1", "text": "Germany invaded Poland; a moving average of losses rose."}]
    rows = [("q1", "Then Germany invaded Poland."), ("q2", "The Moving Average of losses rose."),
            ("q3", "Germany invaded Poland.")]
    run.write_text("".join(json.dumps({"question_id": q, "question": "What happened?", "provider": "bot",
                                       "answer": a, "retrieved": context}) + "\n" for q, a in rows))
    cli("ingest", str(run), db=db_path, check=True)
    for ruleset in ("t3_aware", "refined"):
        cli("recompute", "--run", "history", "--ruleset", ruleset, db=db_path, check=True)
    return db_path


def _open(db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("EVALUATOR_DB", str(db))
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    at.query_params.update({"run": "history", "a": "t3_aware", "b": "refined"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_refined_beside_t3_aware_shows_the_sentence_initial_fixes_as_flips(refined_store, monkeypatch):
    at = _open(refined_store, monkeypatch)
    table = next(e.value for e in at.dataframe if {"pass_rate_a", "pass_rate_b"} <= set(e.value.columns))
    everyone = table[table["provider"] == "(all)"].iloc[0]
    assert (round(everyone["pass_rate_a"], 3), round(everyone["pass_rate_b"], 3)) == (0.333, 1.0)
    flips = next(e.value for e in at.dataframe if {"question_id", "check_diff"} <= set(e.value.columns))
    assert sorted(flips["question_id"]) == ["q1", "q2"]
    assert all("no_hallucination" in diff for diff in flips["check_diff"])


def test_a_run_without_templates_gets_no_t1_t2_alarm(refined_store, monkeypatch):
    at = _open(refined_store, monkeypatch)
    assert not [e.value for e in at.error if "T1/T2" in e.value]
    assert any("no templates" in i.value and "2 response verdict(s) differ" in i.value for i in at.info)
