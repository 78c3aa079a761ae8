"""Metrics page (SPEC §6, §8.6) through AppTest: TRUST-SCORE as stored, or how to compute it."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evaluator.queries import metrics as metrics_queries

PAGE = Path(__file__).resolve().parents[2] / "pages" / "metrics.py"


@pytest.fixture
def sample_store(sample_store):
    """The sample store without the metrics `load-samples` computes: these tests start from none."""
    with duckdb.connect(str(sample_store)) as con:
        con.execute("DELETE FROM metric_responses")
        con.execute("DELETE FROM metric_results")
    return sample_store


@pytest.fixture
def open_page(sample_store, monkeypatch):
    def _open(**query: str) -> AppTest:
        monkeypatch.setenv("EVALUATOR_DB", str(sample_store))
        at = AppTest.from_file(str(PAGE), default_timeout=120)
        at.query_params.update(query)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return _open


def stored(db: Path, run: str, with_overrides: bool = False) -> dict[str, dict]:
    """provider -> components of the newest TRUST-SCORE row, read straight from the store."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            """SELECT m.provider, arg_max(m.components::VARCHAR, m.metric_result_id)
               FROM metric_results m JOIN runs r USING (run_id)
               WHERE r.name = ? AND m.judge = 'heuristic' AND m.with_overrides = ? GROUP BY m.provider""",
            [run, with_overrides],
        ).fetchall()
    return {provider: json.loads(components) for provider, components in rows}


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no dataframe with columns {columns}")


def test_nothing_stored_shows_the_command_and_the_url_state(open_page):
    at = open_page()
    assert at.query_params == {"run": "ramayana", "judge": "heuristic"}
    assert any("python -m evaluator metrics --run ramayana" in i.value for i in at.info)
    assert at.button(key="compute_metrics")  # the metrics runner exists, so the page offers to compute


def test_without_the_runner_there_is_no_button(open_page, monkeypatch):
    monkeypatch.setattr(metrics_queries, "_compute_function", lambda: None)
    at = open_page()
    assert any("python -m evaluator metrics --run ramayana" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "compute_metrics"]


def test_the_button_computes_and_the_page_shows_f1gr_and_f1ac(open_page, sample_store):
    at = open_page()
    at.button(key="compute_metrics").click().run()
    assert not at.exception, [e.value for e in at.exception]
    components = stored(sample_store, "ramayana")
    assert set(components) == {"openai", "claude"}
    shown = [m.value for m in at.metric]
    for provider, parts in components.items():
        assert f"{parts['f1gr']:.4f}" in shown and f"{parts['f1ac']:.4f}" in shown
        scores = next(df.value for df in at.dataframe if "F1 refused" in df.value.index)
        assert scores.loc["F1 refused", provider] == pytest.approx(parts["f1_ref"])
        assert scores.loc["R AC", provider] == pytest.approx(parts["r_ac"])
        counts = next(df.value for df in at.dataframe if "unanswerable" in df.value.index)
        assert counts.loc["refused", provider] == parts["n_refused"]
        assert counts.loc["answerable", provider] == parts["n_answerable"]


def test_confusion_matrix_counts_the_stored_refusal_decisions(open_page, sample_store, cli):
    cli("metrics", "--run", "ramayana", db=sample_store, check=True)
    at = open_page()
    matrix = frame_with(at, "provider", "refused_unanswerable", "answered_answerable")
    with duckdb.connect(str(sample_store), read_only=True) as con:
        rows = con.execute(
            """SELECT m.provider, mr.refused, mr.answerable, count(*)
               FROM metric_responses mr JOIN metric_results m USING (metric_result_id)
               JOIN runs r USING (run_id) WHERE r.name = 'ramayana' GROUP BY ALL"""
        ).fetchall()
    column = {(True, False): "refused_unanswerable", (True, True): "refused_answerable",
              (False, True): "answered_answerable", (False, False): "answered_unanswerable"}
    for provider, refused, answerable, count in rows:
        assert matrix.set_index("provider").loc[provider, column[(refused, answerable)]] == count
    for provider, parts in stored(sample_store, "ramayana").items():
        row = matrix.set_index("provider").loc[provider]
        assert row["refused_unanswerable"] + row["refused_answerable"] == parts["n_refused"]
        assert row["answered_answerable"] + row["answered_unanswerable"] == parts["n_answered"]


def test_all_runs_table_and_overrides_toggle(open_page, sample_store, cli):
    cli("metrics", "--run", "ramayana", db=sample_store, check=True)
    cli("metrics", "--run", "clearpath", db=sample_store, check=True)
    at = open_page()
    table = frame_with(at, "run", "provider", "F1GR", "F1AC")
    assert set(table["run"]) == {"ramayana", "clearpath"}
    clear = stored(sample_store, "clearpath")
    for provider, parts in clear.items():
        row = table[(table["run"] == "clearpath") & (table["provider"] == provider)].iloc[0]
        assert row["F1GR"] == pytest.approx(parts["f1gr"]) and row["F1AC"] == pytest.approx(parts["f1ac"])
    at.toggle(key="url_overrides").set_value(True).run()
    assert at.query_params["overrides"] == "1"
    assert any("python -m evaluator metrics --run ramayana" in i.value for i in at.info)  # none stored with overrides


def _run_with_gold(cli, db: Path, tmp_path: Path, name: str, gold: list[str] | None) -> None:
    rows = [{"question_id": f"q{k}", "question": f"Question {k}?", "provider": provider,
             "answer": "The lake sits between two countries.", "answerable": True,
             **({"gold_answers": [gold[k % len(gold)]]} if gold else {})}
            for k in range(4) for provider in ("alpha", "beta")]
    path = tmp_path / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    cli("ingest", str(path), "--name", name, db=db, check=True)
    cli("metrics", "--run", name, db=db, check=True)


def test_f1ac_with_long_form_gold_answers_is_said_not_meaningful(open_page, sample_store, cli, tmp_path):
    _run_with_gold(cli, sample_store, tmp_path, "longform", [
        "Lake Kariba is on the border between Zambia and Zimbabwe, in southern Africa.",
        "The insulin is made by the beta cells of the pancreatic islets of Langerhans."])
    at = open_page(run="longform")
    [warning] = [w.value for w in at.warning if "F1AC is not meaningful" in w.value]
    assert "long-form sentences" in warning
    assert [m.value for m in at.metric if m.label == "F1AC"] == ["0.0000", "0.0000"]  # the figure, said as such
    cli("metrics", "--run", "ramayana", db=sample_store, check=True)
    at = open_page(run="ramayana")  # short gold claims ("Dasharatha"): F1AC means what it says
    assert not [w for w in at.warning if "F1AC" in w.value]


def test_f1ac_without_gold_answers_is_said_not_meaningful(open_page, sample_store, cli, tmp_path):
    _run_with_gold(cli, sample_store, tmp_path, "nogold", None)
    at = open_page(run="nogold")
    assert any("none of its 4 questions carries gold answers" in w.value for w in at.warning)
