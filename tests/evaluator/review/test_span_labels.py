"""evaluator.review.span_labels and review.spans.of_flag on a real store."""

from __future__ import annotations

import pytest

from evaluator.pipeline.recompute import recompute
from evaluator.review import spans as span_view
from evaluator.review.span_labels import SpanLabelError, add_span_label, marks
from evaluator.store.db import connect, fetch_value


def _clearpath_ids(con) -> list[int]:  # type: ignore[no-untyped-def]
    return [r[0] for r in con.execute("SELECT response_id FROM responses JOIN runs USING (run_id) "
                                      "WHERE name = 'clearpath' ORDER BY 1").fetchall()]


def test_a_reviewers_mark_is_kept_once_however_often_the_save_is_retried(sample_store):
    with connect(sample_store) as con:
        rid = _clearpath_ids(con)[0]
        first = add_span_label(con, rid, "ana", 0, 4, "unsupported", client_token="t-1")
        again = add_span_label(con, rid, "ana", 0, 4, "unsupported", client_token="t-1")
        assert first == again
        assert fetch_value(con, "SELECT count(*) FROM span_labels") == 1
        assert [m.spans for m in marks(con, [rid])[rid]] == [((0, 4, "unsupported"),)]


@pytest.mark.parametrize(("start", "end", "label", "message"), [
    (5, 5, "unsupported", "is not a span of the answer"),
    (0, 10**6, "unsupported", "is not a span of the answer"),
    (0, 4, "wrong", "field 'label': 'wrong'; use one of unsupported, benign, false_alarm"),
    (0, None, "unsupported", "field 'end': give both start and end, or neither"),
])
def test_a_mark_that_is_not_a_span_of_the_answer_is_refused_and_nothing_written(sample_store, start, end, label,
                                                                                message):
    with connect(sample_store) as con:
        rid = _clearpath_ids(con)[0]
        with pytest.raises(SpanLabelError, match=message):
            add_span_label(con, rid, "ana", start, end, label)
        assert fetch_value(con, "SELECT count(*) FROM span_labels") == 0


def test_read_and_marked_nothing_is_a_row_without_a_span(sample_store):
    with connect(sample_store) as con:
        rid = _clearpath_ids(con)[0]
        add_span_label(con, rid, "ana", None, None, None)
        assert [(m.annotator, m.spans) for m in marks(con, [rid])[rid]] == [("ana", ())]


def test_a_flags_spans_of_a_verdicts_only_evaluation_are_computed_as_stored(sample_store):
    with connect(sample_store) as con:
        ids = _clearpath_ids(con)
        stored = int(fetch_value(con, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                                      "WHERE name = 'clearpath' AND ruleset = 't3_aware'"))
    verdicts_only = recompute(sample_store, "clearpath", "t3_aware", with_spans=False).evaluation_id
    with connect(sample_store) as con:
        computed = span_view.of_flag(con, verdicts_only, "potential_hallucination", ids)
        assert computed == span_view.of_flag(con, stored, "potential_hallucination", ids)
    assert any(computed.values())
