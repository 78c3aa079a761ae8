"""evaluator.review.annotations: labels per run, append-only ratings validated against the label's scale."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.review import annotations
from evaluator.store.db import connect, fetch_value


@pytest.fixture
def store(sample_store: Path):  # type: ignore[no-untyped-def]
    """(cursor, run_id, response_id) on the sample store with labels on run clearpath."""
    with connect(sample_store) as con:
        run_id = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'clearpath'"))
        response_id = int(fetch_value(con, "SELECT min(response_id) FROM responses WHERE run_id = $r", {"r": run_id}))
        annotations.define_label(con, run_id, "faithfulness", "ordinal", [1, 2, 3, 4])
        annotations.define_label(con, run_id, "tone", "nominal", ["formal", "casual"])
        annotations.define_label(con, run_id, "score", "numeric")
        annotations.define_label(con, run_id, "notes", "text")
        yield con, run_id, response_id


def count(con) -> int:  # type: ignore[no-untyped-def]
    return int(fetch_value(con, "SELECT count(*) FROM annotations"))


def test_define_label_keeps_scale_and_ordered_values_as_text(store) -> None:  # type: ignore[no-untyped-def]
    con, run_id, _ = store
    assert annotations.label(con, run_id, "faithfulness") == {
        "label": "faithfulness", "scale": "ordinal", "values": ["1", "2", "3", "4"], "description": None,
        "value_names": {}}  # the values are their own names


def test_defining_a_label_again_the_same_way_changes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    con, run_id, _ = store
    annotations.define_label(con, run_id, "faithfulness", "ordinal", ["1", "2", "3", "4"])
    assert fetch_value(con, "SELECT count(*) FROM labels WHERE run_id = $r AND label = 'faithfulness'",
                       {"r": run_id}) == 1


def test_redefining_a_label_another_way_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    con, run_id, _ = store
    with pytest.raises(annotations.AnnotationError, match="field 'label'.*already defined"):
        annotations.define_label(con, run_id, "faithfulness", "ordinal", [1, 2, 3])


@pytest.mark.parametrize(("scale", "values", "field"), [("likert", None, "scale"), ("ordinal", ["1"], "scale_values"),
                                                       ("nominal", ["a", "a"], "scale_values")])
def test_bad_label_definitions_name_the_field(store, scale, values, field) -> None:  # type: ignore[no-untyped-def]
    con, run_id, _ = store
    with pytest.raises(annotations.AnnotationError, match=f"field '{field}'"):
        annotations.define_label(con, run_id, "new", scale, values)


def test_a_rating_on_the_scale_is_stored_with_its_number(store) -> None:  # type: ignore[no-untyped-def]
    con, _, response_id = store
    annotations.add_annotation(con, response_id, "ann", "faithfulness", 3, "mostly supported")
    [rating] = annotations.current(con, [response_id])[response_id]
    assert (rating["value"], rating["value_num"], rating["reason"], rating["source"]) == (
        "3", 3.0, "mostly supported", "review")


def test_the_latest_rating_per_annotator_and_label_is_current_and_history_keeps_all(store) -> None:  # type: ignore[no-untyped-def]
    con, _, response_id = store
    annotations.add_annotation(con, response_id, "ann", "faithfulness", "2")
    annotations.add_annotation(con, response_id, "ann", "faithfulness", "4")
    annotations.add_annotation(con, response_id, "other", "faithfulness", "1")
    current = {(r["annotator"], r["value"]) for r in annotations.current(con, [response_id])[response_id]}
    assert current == {("ann", "4"), ("other", "1")}
    assert [r["value"] for r in annotations.history(con, response_id)] == ["2", "4", "1"]


@pytest.mark.parametrize(("label", "value", "message"), [
    ("faithfulness", "5", "field 'value': '5' is not on the scale of 'faithfulness'"),
    ("tone", "rude", "field 'value': 'rude' is not on the scale of 'tone'"),
    ("score", "high", "field 'value': 'score' takes a number"),
    ("score", "nan", "field 'value': 'score' takes a number"),
    ("notes", "  ", "field 'value': give a value"),
    ("fluency", "3", "field 'label': this run defines no label 'fluency'"),
])
def test_a_bad_rating_names_the_field_and_writes_nothing(store, label, value, message) -> None:  # type: ignore[no-untyped-def]
    con, _, response_id = store
    with pytest.raises(annotations.AnnotationError, match=message):
        annotations.add_annotation(con, response_id, "ann", label, value)
    assert count(con) == 0


def test_a_rating_needs_an_annotator_and_a_known_response(store) -> None:  # type: ignore[no-untyped-def]
    con, _, response_id = store
    with pytest.raises(annotations.AnnotationError, match="field 'annotator'"):
        annotations.add_annotation(con, response_id, " ", "faithfulness", "3")
    with pytest.raises(annotations.AnnotationError, match="field 'response_id'"):
        annotations.add_annotation(con, 10**9, "ann", "faithfulness", "3")
    assert count(con) == 0


def test_a_retried_save_with_the_same_token_is_written_once(store) -> None:  # type: ignore[no-untyped-def]
    con, _, response_id = store
    first = annotations.add_annotation(con, response_id, "ann", "tone", "formal", client_token="t1")
    again = annotations.add_annotation(con, response_id, "ann", "tone", "formal", client_token="t1")
    assert first == again and count(con) == 1
