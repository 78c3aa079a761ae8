"""The app shell through Streamlit's AppTest: navigation, sidebar, and the runs of the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def app(sample_store, monkeypatch) -> AppTest:
    monkeypatch.setenv("EVALUATOR_DB", str(sample_store))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    return at


def _all_dataframe_text(at: AppTest) -> str:
    return " ".join(df.value.to_string() for df in at.dataframe)


def test_app_runs_without_exception(app):
    assert not app.exception


def test_default_page_lists_the_three_sample_runs(app):
    text = _all_dataframe_text(app)
    for run in ("ramayana", "ramayana_v2", "clearpath"):
        assert run in text


def test_sidebar_shows_the_store_path(app, sample_store):
    captions = " ".join(c.value for c in app.sidebar.caption)
    assert str(sample_store) in captions


def test_empty_store_says_how_to_load_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert any("ingest" in info.value for info in at.info)


def test_a_run_ingested_by_the_cli_shows_without_restart(app, sample_store, cli, tmp_path):
    run = tmp_path / "late_run.jsonl"
    run.write_text('{"question_id": "q1", "question": "Q?", "provider": "p", "answer": "A"}\n')
    cli("ingest", str(run), db=sample_store, check=True)
    app.run()
    assert "late_run" in _all_dataframe_text(app)


@pytest.mark.parametrize(("page_path", "title"), [
    ("pages/overview.py", "Overview"), ("pages/before_after.py", "Before/after"),
    ("pages/compare.py", "Compare runs"), ("pages/metrics.py", "Metrics"),
    ("pages/triage.py", "Triage"), ("pages/review.py", "Review"),
])
def test_every_page_opens_through_the_navigation(make_app, sample_store, page_path, title):
    app = make_app(sample_store, page_path)
    assert app.title[0].value == title
