"""TRUST-SCORE metrics (SPEC §6) on the reference toy set and on edge cases."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from evaluator.core.registry import metric_entry
from evaluator.core.types import GoldClaim, ResponseInput, RetrievedItem
from evaluator.pipeline.judges import HeuristicJudge, JudgeVerdict
from evaluator.pipeline.metrics.trust import (
    TrustScore,
    answer_correctness,
    claim_supported,
    f1ac,
    f1gr,
    is_answerable,
    judge_refusals,
    normalize,
    trust_score,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "trust_toy.jsonl"
REFERENCE = {
    "f1gr": 0.485714,
    "f1ac": 0.428571,
    "f1_ref": 0.40,
    "f1_ans": 0.571429,
    "p_ac": 0.375,
    "r_ac": 0.50,
}


def _claim(raw: Any, keep_flags: bool) -> GoldClaim:
    if isinstance(raw, str):
        return GoldClaim((raw,), None)
    if isinstance(raw, list):
        return GoldClaim(tuple(raw), None)
    return GoldClaim(tuple(raw["aliases"]), raw.get("supported") if keep_flags else None)


def load_toy(keep_flags: bool = True) -> list[ResponseInput]:
    out = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(
            ResponseInput(
                question_id=row["question_id"],
                question=row["question"],
                provider=row["provider"],
                answer=row["answer"],
                retrieved=tuple(RetrievedItem(r["id"], r["text"], r.get("score")) for r in row["retrieved"]),
                gold_answers=tuple(_claim(g, keep_flags) for g in row["gold_answers"]),
            )
        )
    return out


@pytest.fixture(scope="module")
def judge() -> HeuristicJudge:
    return HeuristicJudge.from_rules()  # the default judge, from the shipped rules


def _figures(score: TrustScore) -> dict[str, float]:
    return {name: getattr(score, name) for name in REFERENCE}


def _resp(qid: str = "q", answer: str = "", **kwargs: Any) -> ResponseInput:
    return ResponseInput(question_id=qid, question="?", provider="p", answer=answer, **kwargs)


# ---------------------------------------------------------------- reference figures


def test_heuristic_judge_refuses_exactly_the_two_reference_refusals(judge: HeuristicJudge) -> None:
    verdicts = judge_refusals(load_toy(), judge)
    assert sorted(q for q, v in verdicts.items() if v.refused) == ["toy3", "toy5"]


def test_toy_set_gives_the_reference_figures_with_supported_flags(judge: HeuristicJudge) -> None:
    responses = load_toy(keep_flags=True)
    score = trust_score(responses, judge_refusals(responses, judge))
    assert _figures(score) == pytest.approx(REFERENCE, abs=1e-6)


def test_toy_set_gives_the_reference_figures_with_support_derived_from_retrieval(
    judge: HeuristicJudge,
) -> None:
    responses = load_toy(keep_flags=False)
    assert all(c.supported is None for r in responses for c in r.gold_answers)
    score = trust_score(responses, judge_refusals(responses, judge))
    assert _figures(score) == pytest.approx(REFERENCE, abs=1e-6)


def test_derived_support_agrees_with_every_recorded_flag() -> None:
    flagged, derived = load_toy(keep_flags=True), load_toy(keep_flags=False)
    for with_flag, without in zip(flagged, derived, strict=True):
        for claim, bare in zip(with_flag.gold_answers, without.gold_answers, strict=True):
            assert claim_supported(bare, without.retrieved) == claim.supported, (with_flag.question_id, claim)


def test_toy_set_confusion_counts_and_rows(judge: HeuristicJudge) -> None:
    responses = load_toy()
    score = trust_score(responses, judge_refusals(responses, judge))
    counts = (score.n_answered, score.n_refused, score.n_answerable, score.n_unanswerable)
    assert counts == (4, 2, 3, 3)
    assert (score.n_refused_unanswerable, score.n_answered_answerable) == (1, 2)
    assert {r.question_id: r.ac_q for r in score.rows} == {
        "toy1": 1.0,
        "toy2": 0.5,
        "toy3": 0.0,
        "toy4": 0.0,
        "toy5": 0.0,
        "toy6": 0.0,
    }
    assert {r.refused_by for r in score.rows} == {"judge"}


# ---------------------------------------------------------------- reviewer overrides


def test_reviewer_override_of_refused_changes_the_figures(judge: HeuristicJudge) -> None:
    responses = load_toy()
    # toy4 answers an unanswerable question; a reviewer decides it counts as refused.
    score = trust_score(responses, judge_refusals(responses, judge), overrides={"toy4": True})
    assert (score.f1_ref, score.f1_ans, score.f1gr) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    assert (score.p_ac, score.r_ac, score.f1ac) == pytest.approx((0.5, 0.5, 0.5))
    row = next(r for r in score.rows if r.question_id == "toy4")
    assert (row.refused, row.refused_by) == (True, "reviewer")


def test_reviewer_override_wins_over_the_judge() -> None:
    score = trust_score([_resp("a", "x")], refusals={"a": True}, overrides={"a": False})
    (row,) = score.rows
    assert (row.refused, row.refused_by) == (False, "reviewer")


def test_override_alone_is_enough_without_a_judge_decision() -> None:
    (row,) = trust_score([_resp("a")], refusals={}, overrides={"a": True}).rows
    assert row.refused


def test_missing_refusal_decision_is_an_error() -> None:
    with pytest.raises(KeyError, match="'a'"):
        trust_score([_resp("a")], refusals={})


def test_duplicate_question_ids_are_an_error() -> None:
    with pytest.raises(ValueError, match="twice"):
        trust_score([_resp("a"), _resp("a")], refusals={"a": False})


def test_judge_verdicts_are_accepted_as_decisions() -> None:
    verdict = JudgeVerdict(refused=False, reasoning="answers", span=None)
    (row,) = trust_score([_resp("a")], refusals={"a": verdict}).rows
    assert row.refused is False


# ---------------------------------------------------------------- zero denominators


def test_empty_run_gives_zero_everywhere() -> None:
    score = trust_score([], refusals={})
    figures = {k: v for k, v in dataclasses.asdict(score).items() if k != "rows"}
    assert set(figures.values()) == {0}


def test_everything_refused_gives_zero_answer_side_without_dividing_by_zero() -> None:
    claim = GoldClaim(("Paris",), True)
    responses = [_resp("a", "I cannot say.", gold_answers=(claim,)), _resp("b", "No.", gold_answers=(claim,))]
    score = trust_score(responses, refusals={"a": True, "b": True})
    assert score.n_answered == 0 and score.n_unanswerable == 0
    assert (score.p_ans, score.r_ans, score.f1_ans) == (0.0, 0.0, 0.0)
    assert (score.p_ref, score.r_ref, score.f1_ref) == (0.0, 0.0, 0.0)
    assert (score.p_ac, score.f1ac, score.f1gr) == (0.0, 0.0, 0.0)


def test_answerable_by_flag_without_supported_claims_has_zero_ac_q() -> None:
    resp = _resp("a", "Paris", answerable=True, gold_answers=(GoldClaim(("Paris",), False),))
    assert answer_correctness(resp, refused=False, answerable=True) == 0.0


# ---------------------------------------------------------------- AC_q and answerability


def test_ac_q_is_the_share_of_supported_claims_found_in_the_answer() -> None:
    claims = (
        GoldClaim(("1908",), True),
        GoldClaim(("2012", "twenty twelve"), True),
        GoldClaim(("x",), False),
    )
    resp = _resp("a", "It was in 2012.", gold_answers=claims)
    assert answer_correctness(resp, refused=False, answerable=True) == pytest.approx(0.5)


def test_ac_q_is_zero_for_a_refused_answer_even_if_it_holds_the_claim() -> None:
    resp = _resp("a", "I cannot be sure, but Paris.", gold_answers=(GoldClaim(("Paris",), True),))
    assert answer_correctness(resp, refused=True, answerable=True) == 0.0


def test_answerable_flag_wins_over_gold_claims() -> None:
    resp = _resp(answerable=False, gold_answers=(GoldClaim(("Paris",), True),))
    assert is_answerable(resp) is False


def test_gold_claims_decide_answerability_when_no_flag() -> None:
    assert is_answerable(_resp(gold_answers=(GoldClaim(("Lyon",), False),))) is False
    assert is_answerable(_resp(gold_answers=(GoldClaim(("Paris",), True),))) is True


def test_without_flag_or_claims_answerable_means_not_t3() -> None:
    assert is_answerable(_resp(template="T1")) is True
    assert is_answerable(_resp(template="T3")) is False
    assert is_answerable(_resp(template="T1", expected_template="T3")) is False


# ---------------------------------------------------------------- normalisation


def test_normalize_lowercases_strips_punctuation_articles_and_folds_space() -> None:
    assert normalize("  The  Capital, of\tFrance!  is an  A-list city. ") == "capital of france is alist city"


def test_normalize_removes_articles_only_as_whole_words() -> None:
    assert normalize("Theatre Anatomy Amazon") == "theatre anatomy amazon"


def test_normalize_removes_unicode_punctuation() -> None:
    assert (
        normalize("Earth\u2019s \u201chighest\u201d mountain\u2014Everest")
        == "earths highest mountaineverest"
    )


def test_alias_support_matches_normalized_text_on_word_boundaries() -> None:
    retrieved = (RetrievedItem("1", "The START of the Art-Deco era.", 0.9),)
    assert claim_supported(GoldClaim(("Art-Deco",), None), retrieved) is True
    assert claim_supported(GoldClaim(("tart",), None), retrieved) is False
    assert claim_supported(GoldClaim(("star",), None), retrieved) is False


def test_an_alias_that_normalizes_to_nothing_never_occurs() -> None:
    retrieved = (RetrievedItem("1", "the a an", 0.9),)
    assert claim_supported(GoldClaim(("The",), None), retrieved) is False


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("name", "granularity"), [("f1gr", "dataset"), ("f1ac", "dataset"), ("ac_q", "query")]
)
def test_metrics_declare_their_granularity(name: str, granularity: str) -> None:
    assert metric_entry(name).granularity == granularity


def test_dataset_metric_functions_agree_with_trust_score(judge: HeuristicJudge) -> None:
    responses = load_toy()
    score = trust_score(responses, judge_refusals(responses, judge))
    assert (f1gr(score.rows), f1ac(score.rows)) == (score.f1gr, score.f1ac)
