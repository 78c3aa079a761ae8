"""The generic `rag` profile (issue 13 §2), unscored retrieval, and the `refined` proper-noun rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evaluator.core.types import FAIL, NA, PASS, CheckResult, ResponseEvaluation, ResponseInput

Make = Callable[..., ResponseInput]
Run = Callable[..., ResponseEvaluation]
Check = Callable[..., CheckResult]

UNSCORED = [("doc-1", "The Eiffel Tower opened to the public on 31 March 1889.", None)]


def rag(check_of: Check, name: str, resp: ResponseInput, **kwargs: Any) -> CheckResult:
    return check_of(name, resp, profile="rag", **kwargs)


# --- which checks apply ----------------------------------------------------------------------


def test_rag_template_checks_are_na_with_a_reason(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("It opened in 1889.", retrieved=UNSCORED), profile="rag")
    for name in ("routing_check", "follows_template"):
        assert ev.check(name).verdict == NA
        assert "rag profile has no templates" in ev.check(name).reason


def test_rag_citations_are_na_without_a_citation_pattern(check_of: Check, make_resp: Make) -> None:
    result = rag(check_of, "cites_shlokas", make_resp("It opened in 1889.", retrieved=UNSCORED))
    assert (result.verdict, result.reason) == (NA, "this bot's profile defines no citation pattern")


def test_rag_no_hallucination_applies(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("It was designed by Gustave Eiffel.", retrieved=UNSCORED)
    assert rag(check_of, "no_hallucination", resp).verdict == FAIL


# --- answers_question follows answerability ----------------------------------------------------


def test_rag_unanswerable_question_refused_passes(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("The document does not provide information about the architect.", answerable=False)
    result = rag(check_of, "answers_question", resp)
    assert result.verdict == PASS
    assert "unanswerable" in result.reason
    assert [s.text for s in result.spans] == ["document does not provide"]


def test_rag_unanswerable_question_answered_fails(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("The architect was Stephen Sauvestre.", answerable=False)
    result = rag(check_of, "answers_question", resp)
    assert (result.verdict, result.reason) == (FAIL, "unanswerable question, but the answer does not refuse")


def test_rag_empty_answer_to_an_unanswerable_question_is_a_refusal(check_of: Check, make_resp: Make) -> None:
    assert rag(check_of, "answers_question", make_resp("  \n", answerable=False)).verdict == PASS


def test_rag_answerable_question_refused_fails(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("It is unanswerable from the passages.", answerable=True)
    result = rag(check_of, "answers_question", resp)
    assert (result.verdict, result.reason) == (FAIL, "answerable question, but the answer refuses")


def test_rag_answerable_question_needs_the_short_gold_answer(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("It opened in 1890.", answerable=True, gold_answers=["31 March 1889"])
    result = rag(check_of, "answers_question", resp)
    assert result.verdict == FAIL
    assert "short gold answers" in result.reason


def test_rag_answerable_question_with_the_gold_answer_passes(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("It opened on 31 March 1889.", answerable=True, gold_answers=["31 March 1889"])
    result = rag(check_of, "answers_question", resp)
    assert result.verdict == PASS
    assert [s.text for s in result.spans] == ["31 March 1889"]


def test_rag_long_gold_answers_are_not_expected_verbatim(check_of: Check, make_resp: Make) -> None:
    long_gold = "The Eiffel Tower was opened to the public on the thirty-first of March in 1889 after two years"
    resp = make_resp("It opened in 1889.", answerable=True, gold_answers=[long_gold])
    result = rag(check_of, "answers_question", resp)
    assert (result.verdict, result.reason) == (PASS, "answered, no short gold answer to compare")


def test_rag_unknown_answerability_answered_passes_and_says_so(check_of: Check, make_resp: Make) -> None:
    result = rag(check_of, "answers_question", make_resp("It opened in 1889."))
    assert result.verdict == PASS
    assert "answerability unknown: an answer counts as a pass" in result.reason


def test_rag_t3_responses_keep_the_t3_rule(check_of: Check, make_resp: Make, good_t3: str) -> None:
    resp = make_resp(good_t3, template="T3", answerable=True)
    assert rag(check_of, "answers_question", resp).verdict == PASS


def test_seed_profiles_do_not_use_the_abstention_pack(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("The document does not provide the date.", template="T1")
    assert check_of("answers_question", resp, profile="ramayana").verdict == PASS


# --- unscored retrieval --------------------------------------------------------------------------


def test_unscored_items_are_context_no_warning(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("It opened in 1889.", retrieved=UNSCORED), profile="rag")
    assert "no_context_warning" not in ev.flag_names()


def test_nothing_retrieved_still_warns(run: Run, make_resp: Make) -> None:
    assert "no_context_warning" in run(make_resp("It opened in 1889."), profile="rag").flag_names()


def test_scored_items_below_threshold_still_warn_beside_unscored_ones(run: Run, make_resp: Make) -> None:
    resp = make_resp("It opened in 1889.", retrieved=[*UNSCORED, ("doc-2", "other", 0.1)])
    assert "no_context_warning" in run(resp, profile="rag").flag_names()


def test_retrieval_check_says_scores_were_not_recorded(check_of: Check, make_resp: Make) -> None:
    result = rag(check_of, "retrieval_check", make_resp("It opened in 1889.", retrieved=UNSCORED))
    assert result.verdict == NA
    assert "similarity scores were not recorded" in result.reason
    assert "1 item counted as context" in result.reason


def test_retrieval_check_unscored_still_checks_expected_ids(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("It opened in 1889.", retrieved=UNSCORED, expected_ids=["doc-9"])
    assert rag(check_of, "retrieval_check", resp).verdict == FAIL


# --- refined proper nouns ------------------------------------------------------------------------


def test_literal_rule_flags_sentence_initial_function_words(run: Run, make_resp: Make) -> None:
    resp = make_resp("Then Germany invaded. The Moving Average rose.",
                     retrieved=[("d", "Germany invaded; a moving average rose", 0.9)])
    spans = next(f.spans for f in run(resp, ruleset="t3_aware", profile="rag").flags
                 if f.flag == "potential_hallucination")
    assert [s.text for s in spans] == ["Then Germany", "The Moving Average"]


def test_refined_rule_drops_function_words_and_ignores_case(run: Run, make_resp: Make) -> None:
    resp = make_resp("Then Germany invaded. The Moving Average rose.",
                     retrieved=[("d", "Germany invaded; a moving average rose", 0.9)])
    ev = run(resp, ruleset="refined", profile="rag")
    assert "potential_hallucination" not in ev.flag_names()
    assert ev.check("no_hallucination").verdict == PASS


def test_refined_rule_still_flags_an_unsupported_name(run: Run, make_resp: Make) -> None:
    resp = make_resp("However Gustave Eiffel designed it.", retrieved=[("d", "A tower in Paris.", 0.9)])
    spans = next(f.spans for f in run(resp, ruleset="refined", profile="rag").flags
                 if f.flag == "potential_hallucination")
    assert [s.text for s in spans] == ["Gustave Eiffel"]


# --- an unanswerable question is the T3 idea generalised ------------------------------------------


def test_t3_aware_does_not_require_retrieval_for_an_unanswerable_question(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("The document does not say.", answerable=False)
    result = rag(check_of, "retrieval_check", resp, ruleset="t3_aware")
    assert (result.verdict, result.reason) == (NA, "retrieval is not required for an unanswerable question")


def test_legacy_still_requires_retrieval_for_an_unanswerable_question(check_of: Check, make_resp: Make) -> None:
    resp = make_resp("The document does not say.", answerable=False)
    assert rag(check_of, "retrieval_check", resp, ruleset="legacy").verdict == FAIL


def test_rag_unknown_answerability_refusal_is_not_applicable_and_says_why(check_of: Check, make_resp: Make) -> None:
    # issue 28: a refusal is right only for a question that cannot be answered, and the run does not say
    result = rag(check_of, "answers_question", make_resp("The document does not provide the opening date."))
    assert result.verdict == NA
    assert result.reason.startswith("answerability unknown: the answer refuses")
