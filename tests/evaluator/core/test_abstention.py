"""The abstention rule pack (issue 13 §3): the heuristic judge against labelled responses of
several bots, and the seed refusal_detected flag left as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.core.evaluate import evaluate
from evaluator.core.types import ResponseInput
from evaluator.pipeline.judges.heuristic import HeuristicJudge
from evaluator.rules.load import Rules, load_rules

LABELLED = Path(__file__).resolve().parents[2] / "fixtures" / "labelled_refusals.jsonl"


def labelled() -> list[dict]:
    return [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_labelled_fixture_has_several_bots_and_a_third_refusals() -> None:
    rows = labelled()
    assert len(rows) >= 60
    assert len({r["bot"] for r in rows}) >= 5
    assert 0.25 <= sum(r["refused"] for r in rows) / len(rows) <= 0.45


def test_heuristic_judge_precision_and_recall_on_labelled_refusals(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    tp = fp = fn = 0
    for row in labelled():
        refused = judge.judge(row["question"], row["answer"]).refused
        tp += refused and row["refused"]
        fp += refused and not row["refused"]
        fn += row["refused"] and not refused
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(f"heuristic judge on {LABELLED.name}: precision {precision:.3f}, recall {recall:.3f} "
          f"(tp {tp}, fp {fp}, fn {fn})")
    assert precision >= 0.8
    assert recall >= 0.8


def test_seed_judge_without_the_pack_misses_most_abstentions(rules: Rules) -> None:
    """What the issue reported: the §5 phrases and §4 patterns alone find few of them."""
    seed = HeuristicJudge.from_rules(rules, abstention_patterns=(), empty_is_refusal=False)
    refusals = [r for r in labelled() if r["refused"]]
    found = sum(seed.judge(r["question"], r["answer"]).refused for r in refusals)
    assert found / len(refusals) < 0.5


def test_rag_profile_refusal_detection_agrees_with_the_labels(rules: Rules) -> None:
    """answers_question under `rag` on an unanswerable question passes exactly when it refuses."""
    agree = 0
    rows = labelled()
    for row in rows:
        resp = ResponseInput("q", row["question"], row["bot"], row["answer"], answerable=False)
        passed = evaluate(resp, ruleset="t3_aware", rules=rules, profile="rag").check("answers_question").verdict
        agree += (passed == "PASS") == row["refused"]
    assert agree / len(rows) >= 0.9


@pytest.mark.parametrize("answer", [
    "The document does not provide information about the band.",
    "The context doesn\u2019t mention the director.",
    "It is unanswerable to determine the capital from the given passages.",
    "This is not mentioned in the passage.",
    "The age cannot be determined from the text.",
    "There is no information about the CEO in the documents.",
    "",
    "   ",
])
def test_pack_phrasings_are_refusals(rules: Rules, answer: str) -> None:
    assert HeuristicJudge.from_rules(rules).judge("q", answer).refused


@pytest.mark.parametrize("answer", [
    "The document provides information about the treaty: it was signed in 1919.",
    "The context mentions that the river is 6,650 km long.",
    "There is a $15 fee for late payments.",
])
def test_near_misses_are_not_refusals(rules: Rules, answer: str) -> None:
    assert not HeuristicJudge.from_rules(rules).judge("q", answer).refused


def test_judge_reason_names_the_pack_version(rules: Rules) -> None:
    verdict = HeuristicJudge.from_rules(rules).judge("q", "The passage does not say.")
    assert f"pack {rules.abstention.version}" in verdict.reasoning
    assert verdict.span == "passage does not say"


def test_refusal_detected_flag_keeps_the_seed_list(rules: Rules) -> None:
    resp = ResponseInput("q", "q", "p", "The document does not provide information about it.")
    ev = evaluate(resp, ruleset="t3_aware", rules=rules, profile="rag")
    assert "refusal_detected" not in ev.flag_names()


def test_pack_is_versioned_in_the_rules(rules: Rules) -> None:
    assert rules.abstention.version == "2"  # 2: the judge's hedges (issue 28)
    assert rules.abstention.empty_is_refusal is True
    assert len(rules.abstention.patterns) >= 10


# --- the judge's hedges (issue 28): a partial answer that says what the document leaves out ---


def test_an_abstention_after_a_contrast_hedges_a_partial_answer(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    answer = ("The saying comes from a sixteenth-century schoolbook. However, its precise origin is not "
              "mentioned in the document.")
    assert judge.judge("Where does the saying come from?", answer).refused is False


def test_an_abstention_after_but_in_the_same_sentence_hedges(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    answer = "She walks again in the episode, but the exact timing is not specified in the article."
    assert judge.judge("When does she walk?", answer).refused is False


def test_an_apology_before_the_contrast_is_still_a_refusal(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    assert judge.judge("q", "I\u2019m sorry, but the document does not provide the opening date.").refused


@pytest.mark.parametrize("answer", ["However, the context does not mention it.",
                                    "But the document does not provide that information.",
                                    "Although I searched, the documents do not contain any information about it.",
                                    "Sure, I'd be happy to help! However, the document does not mention it."])
def test_a_contrast_with_no_answer_before_it_is_still_a_refusal(rules: Rules, answer: str) -> None:
    assert HeuristicJudge.from_rules(rules).judge("q", answer).refused


def test_an_abstention_first_is_a_refusal_whatever_follows(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    answer = "The document does not provide the opening date. However, it was a busy year."
    assert judge.judge("When did it open?", answer).refused


def test_a_second_abstention_that_does_not_hedge_refuses(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    answer = ("It opened in spring, but the exact day is not mentioned in the text. The document does not "
              "provide anything else about it.")
    assert judge.judge("When did it open?", answer).refused


def test_a_hedge_that_leaves_out_what_was_asked_is_a_refusal(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules)
    answer = "The score was 3-1, but the passage does not specify the attendance."
    assert judge.judge("What was the attendance at the final?", answer).refused


def test_a_pack_without_hedge_markers_refuses_every_abstention(rules: Rules) -> None:
    judge = HeuristicJudge.from_rules(rules, hedge_markers=())
    answer = "She walks again in the episode, but the exact timing is not specified in the article."
    assert judge.judge("When does she walk?", answer).refused


def test_hedge_markers_must_be_a_list_of_words(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[abstention]\nversion = "x"\nempty_is_refusal = false\npatterns = []\nhedge_markers = "but"\n',
                   encoding="utf-8")
    with pytest.raises(ValueError, match="abstention.hedge_markers"):
        load_rules(bad)
