"""evaluator.review.span_agreement: a flag's characters against people's marks (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evaluator.review.span_agreement import (
    HumanMarks,
    Tally,
    annotator_f1,
    balanced_accuracy,
    intersect,
    kind,
    subtract,
    truth,
    union,
)

spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)).map(lambda t: (min(t), max(t))), max_size=6)


def _chars(intervals) -> set[int]:  # type: ignore[no-untyped-def]
    return {i for start, end in intervals for i in range(start, end)}


@given(spans, spans)
def test_interval_algebra_equals_sets_of_characters(a, b):
    ua, ub = union(a), union(b)
    assert _chars(ua) == _chars(a)
    assert all(e1 < s2 for (_, e1), (s2, _) in zip(ua, ua[1:], strict=False))  # merged: nothing touches
    assert _chars(intersect(ua, ub)) == _chars(a) & _chars(b)
    assert _chars(subtract(ua, ub)) == _chars(a) - _chars(b)


def test_labels_mean_unsupported_unless_benign_or_a_false_alarm():
    assert [kind(x) for x in ("Unwanted.Intrinsic", "unsupported", None, "Benign", "benign.obvious",
                              "false_alarm")] == ["unsupported"] * 3 + ["benign"] * 2 + ["false_alarm"]


def test_truth_is_the_union_of_annotators_and_benign_never_overrides_unsupported():
    people = truth([HumanMarks("a", ((0, 5, "unsupported"), (10, 20, "Benign"))),
                    HumanMarks("b", ((3, 8, "Unwanted"), (15, 25, "unsupported")))])
    assert people.unsupported == [(0, 8), (15, 25)]
    assert people.benign == [(10, 15)]


def test_a_reviewer_who_marked_only_false_alarms_says_the_response_is_supported():
    assert not truth([HumanMarks("a", ((0, 5, "false_alarm"),))]).positive


def test_characters_count_hits_misses_and_false_alarms_and_skip_benign_text():
    tally = Tally()
    people = truth([HumanMarks("a", ((0, 10, "unsupported"), (20, 30, "Benign")))])
    tally.add(1, True, [(5, 15), (20, 25)], people)  # 5 hit, 5 false (10-15), 5 on benign text: not counted
    assert (tally.char_tp, tally.char_fp, tally.char_fn) == (5, 5, 5)
    figures = tally.as_dict()
    assert figures["char_precision"] == 0.5 and figures["char_recall"] == 0.5 and figures["char_f1"] == 0.5


def test_responses_fill_the_confusion_and_remember_which_they_were():
    tally = Tally()
    marked, clean = truth([HumanMarks("a", ((0, 4, "x"),))]), truth([HumanMarks("a")])
    tally.add(1, True, [], marked)
    tally.add(2, True, [(0, 2)], clean)
    tally.add(3, False, [], marked)
    tally.add(4, False, [], clean)
    tally.add(5, False, [], clean)
    assert (tally.tp, tally.fp, tally.fn, tally.tn) == (1, 1, 1, 2)
    assert tally.response_ids == {"tp": [1], "fp": [2], "fn": [3], "tn": [4, 5]}
    figures = tally.as_dict()
    assert figures["precision"] == 0.5 and figures["recall"] == 0.5
    assert figures["balanced_accuracy"] == (0.5 + 2 / 3) / 2
    assert (tally.char_tp, tally.char_fp, tally.char_fn) == (0, 2, 8)  # the clean answer's 2; the 2 missed 4s


def test_balanced_accuracy_needs_both_classes():
    assert balanced_accuracy(3, 0, 1, 0) is None
    assert balanced_accuracy(1, 1, 1, 1) == 0.5


def test_annotators_pairwise_f1_is_over_the_responses_both_marked():
    marks = {1: [HumanMarks("a", ((0, 10, "u"),)), HumanMarks("b", ((5, 15, "u"),))],
             2: [HumanMarks("a", ((0, 4, "u"),))]}
    assert annotator_f1(marks) == [{"annotator_a": "a", "annotator_b": "b", "responses": 1, "char_f1": 0.5}]
