"""`evaluator metrics` through the real CLI: the TRUST-SCORE reference figures and the sample runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

KEYS = {"provider", "f1gr", "f1_ref", "f1_ans", "f1ac", "p_ac", "r_ac",
        "n_answered", "n_refused", "n_answerable", "n_unanswerable"}


def _metrics(cli, db, run: str, *extra: str) -> list[dict]:
    return json.loads(cli("metrics", "--run", run, "--json", *extra, db=db, check=True).stdout)


def test_toy_fixture_gives_the_reference_figures(cli, db_path):
    cli("ingest", str(FIXTURES / "trust_toy.jsonl"), "--name", "toy", db=db_path, check=True)
    [row] = _metrics(cli, db_path, "toy")
    assert set(row) == KEYS
    assert row["f1gr"] == pytest.approx(0.485714, abs=1e-6)
    assert row["f1ac"] == pytest.approx(0.428571, abs=1e-6)
    assert row["f1_ref"] == pytest.approx(0.40, abs=1e-6)
    assert row["f1_ans"] == pytest.approx(0.571429, abs=1e-6)
    assert row["p_ac"] == pytest.approx(0.375, abs=1e-6)
    assert row["r_ac"] == pytest.approx(0.50, abs=1e-6)


def test_metrics_are_per_provider_and_fractions(cli, sample_store):
    rows = _metrics(cli, sample_store, "ramayana")
    assert {r["provider"] for r in rows} == {"openai", "claude"}
    for row in rows:
        for key in ("f1gr", "f1_ref", "f1_ans", "f1ac", "p_ac", "r_ac"):
            assert 0.0 <= row[key] <= 1.0


def test_refusing_unanswerable_t3_questions_raises_f1_ref(cli, sample_store):
    rows = _metrics(cli, sample_store, "ramayana")
    for row in rows:
        assert row["n_unanswerable"] >= 8  # the eight T3 questions at least
        assert row["n_refused"] >= 8
        assert row["f1_ref"] > 0.5


def test_a_reviewer_refused_override_is_used_with_overrides(cli, sample_store):
    import duckdb

    with duckdb.connect(str(sample_store)) as con:
        [(response_id,)] = con.execute(
            "SELECT r.response_id FROM responses r JOIN runs USING (run_id) "
            "WHERE runs.name = 'ramayana' AND r.provider = 'openai' AND r.question_id = 'q01'"
        ).fetchall()
        con.execute(
            "INSERT INTO overrides VALUES (nextval('override_ids'), ?, NULL, 'refused', 'false', 'true', "
            "'treat as refused', 'alice', now(), NULL, NULL)", [response_id]
        )
    before = {r["provider"]: r for r in _metrics(cli, sample_store, "ramayana")}
    after = {r["provider"]: r for r in _metrics(cli, sample_store, "ramayana", "--with-overrides")}
    assert after["openai"]["n_refused"] == before["openai"]["n_refused"] + 1
    assert after["claude"] == before["claude"]


def test_metrics_are_stored_with_components_and_per_response_rows(cli, sample_store):
    import duckdb

    _metrics(cli, sample_store, "clearpath")
    with duckdb.connect(str(sample_store)) as con:
        results = con.execute("SELECT metric_result_id, components FROM metric_results m JOIN runs USING (run_id) "
                              "WHERE runs.name = 'clearpath'").fetchall()
        assert results
        components = json.loads(results[0][1])
        assert {"f1gr", "p_ref", "r_ref", "n_answerable"} <= set(components)
        [(count,)] = con.execute("SELECT count(*) FROM metric_responses WHERE metric_result_id = ?",
                                 [results[0][0]]).fetchall()
        assert count == 16


def test_llm_judge_without_configuration_is_a_clear_error(cli, sample_store, monkeypatch):
    monkeypatch.delenv("EVALUATOR_JUDGE_MODEL", raising=False)
    result = cli("metrics", "--run", "clearpath", "--judge", "llm", db=sample_store)
    assert result.returncode == 2
    assert "EVALUATOR_JUDGE_MODEL" in result.stderr or "model" in result.stderr


def test_a_write_the_store_refuses_names_its_own_error_and_is_rolled_back(cli, db_path):
    # A store whose metric_results already holds the id its sequence gives next (edited by hand,
    # say): the INSERT fails inside the write window's transaction. The user sees that refusal,
    # not DuckDB's "transaction is aborted" from the cleanup after it.
    import duckdb

    cli("ingest", str(FIXTURES / "trust_toy.jsonl"), "--name", "toy", db=db_path, check=True)
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO metric_results VALUES (1, 1, 'by hand', 'trust_score', 'heuristic', false, 0.5, NULL, "
                "now())")
    con.close()
    result = cli("metrics", "--run", "toy", "--judge", "heuristic", db=db_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        'evaluator: error: the store refused a write, which was rolled back: Constraint Error: '
        'Duplicate key "metric_result_id: 1" violates primary key constraint.']
    con = duckdb.connect(str(db_path), read_only=True)
    assert con.execute("SELECT provider FROM metric_results").fetchall() == [("by hand",)]
    assert con.execute("SELECT count(*) FROM metric_responses").fetchall() == [(0,)]
    con.close()
