"""evaluator.review.agreement: alpha through value counts, check-vs-human statistics, mapping syntax."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest

from evaluator.review import agreement as stats

NAN = math.nan
# krippendorff's own example (Krippendorff 2011, p. 8): 4 coders × 12 units, with gaps.
RELIABILITY = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
               [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
               [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
               [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


def value_counts(matrix: list[list[float]]) -> tuple[np.ndarray, list[float]]:
    data = np.asarray(matrix, dtype=float)
    domain = sorted({v for v in data.flatten() if not math.isnan(v)})
    counts = np.array([[int(np.sum(data[:, unit] == v)) for v in domain] for unit in range(data.shape[1])])
    return counts, domain


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_from_value_counts_equals_the_package_on_a_reliability_matrix(level: str) -> None:
    counts, domain = value_counts(RELIABILITY)
    expected = krippendorff.alpha(reliability_data=RELIABILITY, level_of_measurement=level)
    assert stats.alpha(counts, domain, level) == pytest.approx(expected, abs=1e-6)


def test_alpha_ignores_units_rated_once() -> None:
    counts, domain = value_counts(RELIABILITY)
    lonely = np.vstack([counts, np.eye(len(domain), dtype=int)[:1]])  # one more unit with one rating
    assert stats.alpha(lonely, domain, "nominal") == pytest.approx(stats.alpha(counts, domain, "nominal"), abs=1e-12)


def test_alpha_without_a_pairable_unit_is_undefined_with_a_reason() -> None:
    with pytest.raises(stats.AgreementError, match="two or more annotators"):
        stats.alpha([[1, 0], [0, 1]], [1, 2], "nominal")


def test_alpha_without_variation_is_undefined_with_a_reason() -> None:
    with pytest.raises(stats.AgreementError, match="same value"):
        stats.alpha([[2, 0], [3, 0]], [1, 2], "interval")


def test_levels_follow_the_scale() -> None:
    assert stats.levels_for("ordinal", True) == {"nominal": None, "ordinal": None, "interval": None}
    assert stats.levels_for("ordinal", False)["interval"] == "the scale's values are not numbers"
    assert stats.levels_for("nominal", False)["ordinal"] is not None
    assert all(stats.levels_for("text", False).values())


def test_kappa_precision_and_recall_on_a_known_confusion_matrix() -> None:
    # check PASS: 20 humans PASS, 5 humans FAIL; check FAIL: 10 humans PASS, 15 humans FAIL.
    # observed 35/50 = 0.7; chance (25·30 + 25·20) / 50² = 0.5; kappa = 0.2 / 0.5 = 0.4.
    confusion = stats.Confusion(pass_pass=20, pass_fail=5, fail_pass=10, fail_fail=15)
    assert confusion.kappa() == pytest.approx(0.4)
    assert confusion.precision() == pytest.approx(15 / 25)
    assert confusion.recall() == pytest.approx(15 / 20)


def test_kappa_is_undefined_when_both_sides_say_one_thing() -> None:
    confusion = stats.Confusion(pass_pass=7, pass_fail=0, fail_pass=0, fail_fail=0)
    assert confusion.kappa() is None and confusion.precision() is None and confusion.recall() is None


def test_parse_mapping_reads_check_label_operator_and_threshold() -> None:
    assert stats.parse_mapping("no_hallucination=faithfulness>=3") == stats.Mapping(
        "no_hallucination", "faithfulness", ">=", "3")
    assert stats.parse_mapping("answers_question=verdict=yes").operator == "=="


@pytest.mark.parametrize("text", ["no_hallucination", "faithfulness>=3", "=faithfulness>=3", "x=y>=", ""])
def test_parse_mapping_rejects_bad_syntax_with_the_expected_form(text: str) -> None:
    with pytest.raises(stats.AgreementError, match="CHECK=LABEL>=VALUE"):
        stats.parse_mapping(text)


def test_default_mapping_passes_at_the_midpoint_of_a_number_scale() -> None:
    assert stats.default_mapping("Faithfulness", "ordinal", ["1", "2", "3", "4"]) == stats.Mapping(
        "no_hallucination", "Faithfulness", ">=", "2.5")
    assert stats.default_mapping("Groundedness", "ordinal", ["low", "mid", "high"]) == stats.Mapping(
        "no_hallucination", "Groundedness", ">=", "mid")
    # relevance is not answerability: answer_relevance is not paired with answers_question by default
    assert stats.default_mapping("answer_relevance", "ordinal", ["low", "mid", "high"]) is None
    assert stats.default_mapping("fluency", "ordinal", ["1", "2"]) is None


def test_a_nearly_constant_label_and_a_label_of_another_kind_are_cautioned() -> None:
    assert "393 of 400 ratings of answer_relevance are “relevant”" in stats.near_constant(
        "answer_relevance", [("relevant", 393), ("irrelevant", 7)])
    assert stats.near_constant("faithfulness", [("4", 300), ("1", 100)]) is None
    assert stats.near_constant("faithfulness", []) is None
    assert "measure different things" in stats.kind_mismatch("answers_question", "answer_relevance")
    assert stats.kind_mismatch("no_hallucination", "faithfulness") is None
    assert stats.kind_mismatch("answers_question", "fluency") is None  # a kind we cannot tell: no claim
