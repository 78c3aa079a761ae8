"""dashboard.annotate: the Review page's rating form, run by AppTest on a real store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from evaluator.review import annotations
from evaluator.store.db import connect, fetch_value

SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from dashboard.annotate import render_rating_form
from dashboard.common import store_path
render_rating_form(store_path(), {run_id}, {response_id}, {reviewer!r})
"""


@pytest.fixture
def form(sample_store: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EVALUATOR_DB", str(sample_store))
    with connect(sample_store) as con:
        run_id = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'clearpath'"))
        response_id = int(fetch_value(con, "SELECT min(response_id) FROM responses WHERE run_id = $r", {"r": run_id}))
        annotations.define_label(con, run_id, "faithfulness", "ordinal", ["1", "2", "3", "4"])
        annotations.add_annotation(con, response_id, "<b>ann</b>", "faithfulness", "2", "[x](javascript:1)")

    def make(reviewer: str | None = "rev") -> AppTest:
        root = str(Path(__file__).resolve().parents[2])
        app = AppTest.from_string(SCRIPT.format(root=root, run_id=run_id, response_id=response_id,
                                                reviewer=reviewer), default_timeout=60)
        app.run()
        assert not app.exception, [e.value for e in app.exception]
        return app

    return make, sample_store, response_id


def ratings(db: Path, response_id: int) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute("SELECT annotator, value, reason, source FROM annotations WHERE response_id = $r "
                           "ORDER BY annotation_id", {"r": response_id}).fetchall()


def test_a_saved_rating_is_stored_as_the_reviewers_with_source_review(form) -> None:  # type: ignore[no-untyped-def]
    make, db, response_id = form
    app = make()
    app.session_state["rating_value_faithfulness"] = "4"
    app.text_input(key="rating_reason").input("well supported")
    app.button(key="rating_save").click().run()
    assert ratings(db, response_id)[-1] == ("rev", "4", "well supported", "review")
    assert "Rating saved" in app.success[0].value


def test_saving_without_a_value_says_what_to_fix_and_writes_nothing(form) -> None:  # type: ignore[no-untyped-def]
    make, db, response_id = form
    app = make()
    app.button(key="rating_save").click().run()
    assert "field &#39;value&#39;: give a value" in app.error[0].value  # escaped Markdown
    assert len(ratings(db, response_id)) == 1


def test_current_ratings_are_listed_as_plain_table_cells(form) -> None:  # type: ignore[no-untyped-def]
    make, _, _ = form
    table = make().dataframe[0].value
    assert list(table["annotator"]) == ["<b>ann</b>"] and list(table["reason"]) == ["[x](javascript:1)"]


def test_without_a_reviewer_the_form_is_disabled(form) -> None:  # type: ignore[no-untyped-def]
    make, _, _ = form
    app = make(None)
    assert app.button(key="rating_save").disabled
