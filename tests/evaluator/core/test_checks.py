"""The six checks of SPEC §4, each rule both ways."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evaluator.core.checks import citation_key, normalize_answer
from evaluator.core.types import FAIL, NA, PASS, CheckResult, ResponseInput

Check = Callable[..., CheckResult]
Make = Callable[..., ResponseInput]

CITED = "Rama was exiled for fourteen years [Ayodhya-Kanda 18.1]."
RETRIEVED = [("Ayodhya-Kanda 18.1", "Rama goes to the forest for fourteen years.", 0.8)]


def t3(make_resp: Make, answer: str, **kw: object) -> ResponseInput:
    return make_resp(answer, template="T3", expected_template="T3", **kw)


def spans_of(result: CheckResult, kind: str) -> list[str]:
    return [s.text for s in result.spans if s.kind == kind]


# --- routing_check --------------------------------------------------------------------------------


def test_routing_passes_when_classification_matches_expected_routing(check_of: Check, make_resp: Make) -> None:
    r = make_resp("x", expected_routing="in_scope", classification="in_scope")
    assert check_of("routing_check", r).verdict == PASS


def test_routing_fails_when_classification_differs(check_of: Check, make_resp: Make) -> None:
    r = make_resp("x", expected_routing="out_of_scope", classification="in_scope")
    result = check_of("routing_check", r)
    assert result.verdict == FAIL
    assert "out_of_scope" in result.reason


def test_routing_compares_templates_when_no_routing_labels(check_of: Check, make_resp: Make) -> None:
    assert check_of("routing_check", make_resp("x", expected_template="T2", template="T2")).verdict == PASS
    assert check_of("routing_check", make_resp("x", expected_template="T2", template="T1")).verdict == FAIL


def test_routing_maps_a_template_to_a_routing_label(check_of: Check, make_resp: Make) -> None:
    assert check_of("routing_check", make_resp("x", expected_routing="out_of_scope", template="T3")).verdict == PASS
    assert check_of("routing_check", make_resp("x", expected_routing="out_of_scope", template="T1")).verdict == FAIL


def test_routing_ignores_case_and_surrounding_space(check_of: Check, make_resp: Make) -> None:
    r = make_resp("x", expected_routing="In_Scope ", classification="in_scope")
    assert check_of("routing_check", r).verdict == PASS


def test_routing_is_na_when_neither_side_recorded(check_of: Check, make_resp: Make) -> None:
    result = check_of("routing_check", make_resp("x"))
    assert (result.verdict, result.reason) == (NA, "neither the expected nor the actual routing was recorded")


def test_routing_is_na_when_the_bot_side_is_missing(check_of: Check, make_resp: Make) -> None:
    result = check_of("routing_check", make_resp("x", expected_routing="in_scope"))
    assert result.verdict == NA
    assert "not recorded" in result.reason


def test_routing_is_na_when_the_expected_side_is_missing(check_of: Check, make_resp: Make) -> None:
    result = check_of("routing_check", make_resp("x", classification="in_scope"))
    assert result.verdict == NA
    assert "no expected routing" in result.reason


# --- retrieval_check ------------------------------------------------------------------------------


@pytest.mark.parametrize(("score", "verdict"), [(0.8, PASS), (0.35, PASS), (0.3499, FAIL), (0.1, FAIL)])
def test_retrieval_needs_one_item_at_or_above_threshold(check_of: Check, make_resp: Make, score: float,
                                                        verdict: str) -> None:
    r = make_resp(CITED, template="T1", retrieved=[("a", "text", 0.1), ("b", "text", score)])
    assert check_of("retrieval_check", r).verdict == verdict


def test_retrieval_fails_when_nothing_was_retrieved(check_of: Check, make_resp: Make) -> None:
    result = check_of("retrieval_check", make_resp(CITED, template="T1"))
    assert (result.verdict, result.reason) == (FAIL, "nothing was retrieved")


def test_retrieval_is_na_when_no_item_has_a_score(check_of: Check, make_resp: Make) -> None:
    result = check_of("retrieval_check", make_resp(CITED, template="T1", retrieved=[("a", "t", None)]))
    assert result.verdict == NA
    assert "no similarity score" in result.reason


def test_retrieval_ignores_nan_scores(check_of: Check, make_resp: Make) -> None:
    r = make_resp(CITED, template="T1", retrieved=[("a", "t", float("nan")), ("b", "t", 0.2)])
    assert check_of("retrieval_check", r).verdict == FAIL


def test_retrieval_passes_when_an_expected_id_is_retrieved(check_of: Check, make_resp: Make) -> None:
    r = make_resp(CITED, template="T1", retrieved=RETRIEVED, expected_ids=["Bala-Kanda 1.1", "Ayodhya-Kanda 18.1"])
    assert check_of("retrieval_check", r).verdict == PASS


def test_retrieval_fails_when_no_expected_id_is_retrieved(check_of: Check, make_resp: Make) -> None:
    r = make_resp(CITED, template="T1", retrieved=RETRIEVED, expected_ids=["Bala-Kanda 1.1"])
    result = check_of("retrieval_check", r)
    assert result.verdict == FAIL
    assert "Bala-Kanda 1.1" in result.reason


def test_retrieval_normalises_expected_ids(check_of: Check, make_resp: Make) -> None:
    r = make_resp(CITED, template="T1", retrieved=[("ayodhya_kanda_18_1", "t", 0.9)],
                  expected_ids=["Ayodhya-Kanda 18.1"])
    assert check_of("retrieval_check", r).verdict == PASS


def test_retrieval_is_na_for_t3_under_t3_aware(check_of: Check, make_resp: Make, good_t3: str) -> None:
    assert check_of("retrieval_check", t3(make_resp, good_t3), ruleset="t3_aware").verdict == NA


def test_retrieval_fails_for_t3_with_nothing_retrieved_under_legacy(check_of: Check, make_resp: Make,
                                                                    good_t3: str) -> None:
    assert check_of("retrieval_check", t3(make_resp, good_t3), ruleset="legacy").verdict == FAIL


# --- answers_question: T3 -------------------------------------------------------------------------

REFUSAL_EXAMPLES = [
    ("That is outside my scope.", "That is outside my house."),
    ("I cannot help with that.", "I cannot wait to tell you."),
    ("This falls outside what I cover.", "This falls within what I cover."),
    ("It is not within my purview.", "It is not within my reach."),
    ("That is beyond the scope of this bot.", "That is beyond the sea."),
    ("I\u2019m designed to discuss the Ramayana.", "I was designed to discuss the Ramayana."),
    ("I would be happy to help with the epic.", "I would be happy to read the epic."),
    ("Instead, I could tell you about Sita.", "Instead of that, Sita wept."),
    ("However I can tell you about Sita.", "However, Sita wept."),
]


@pytest.mark.parametrize(("refusal", "near_miss"), REFUSAL_EXAMPLES)
def test_each_refusal_pattern_makes_a_proper_t3_refusal(check_of: Check, make_resp: Make, refusal: str,
                                                         near_miss: str) -> None:
    assert check_of("answers_question", t3(make_resp, refusal)).verdict == PASS


@pytest.mark.parametrize(("refusal", "near_miss"), REFUSAL_EXAMPLES)
def test_a_near_miss_is_no_t3_refusal(check_of: Check, make_resp: Make, refusal: str, near_miss: str) -> None:
    result = check_of("answers_question", t3(make_resp, near_miss))
    assert (result.verdict, result.reason) == (FAIL, "not a proper refusal: no refusal pattern matches")


def test_good_t3_is_a_proper_refusal_with_spans(check_of: Check, make_resp: Make, good_t3: str) -> None:
    result = check_of("answers_question", t3(make_resp, good_t3))
    assert result.verdict == PASS
    assert spans_of(result, "refusal_phrase") == ["falls outside my scope", "However, I can"]


def test_bad_t3_is_no_proper_refusal(check_of: Check, make_resp: Make, bad_t3: str) -> None:
    assert check_of("answers_question", t3(make_resp, bad_t3)).verdict == FAIL


@pytest.mark.parametrize("substantive", [
    "According to Valmiki, Rama was exiled.",
    "according to the text he left.",
    "The text states that he left.",
    "The shloka mentions his bow.",
    "He left [Ayodhya-Kanda 31.25].",
])
def test_a_refusal_that_also_answers_is_not_proper(check_of: Check, make_resp: Make, substantive: str) -> None:
    result = check_of("answers_question", t3(make_resp, "That falls outside my scope. " + substantive))
    assert result.verdict == FAIL
    assert "substantive" in result.reason
    assert spans_of(result, "substantive_phrase")


def test_the_substantive_citation_pattern_is_case_sensitive(check_of: Check, make_resp: Make) -> None:
    r = t3(make_resp, "That falls outside my scope (see [ayodhya-kanda 31.25] elsewhere).")
    assert check_of("answers_question", r).verdict == PASS


def test_t3_by_expected_template_alone_uses_the_refusal_rule(check_of: Check, make_resp: Make,
                                                              good_t3: str) -> None:
    r = make_resp(good_t3, template="T1", expected_template="T3")
    assert check_of("answers_question", r).verdict == PASS


# --- answers_question: T1/T2 ----------------------------------------------------------------------


def test_t1_answer_without_gold_passes(check_of: Check, make_resp: Make) -> None:
    result = check_of("answers_question", make_resp(CITED, template="T1"))
    assert (result.verdict, result.reason) == (PASS, "not a refusal (no gold answers to compare)")


def test_t1_refusal_fails(check_of: Check, make_resp: Make) -> None:
    result = check_of("answers_question", make_resp("Sorry, I cannot answer that.", template="T1"))
    assert (result.verdict, result.reason) == (FAIL, "the answer is a refusal")
    assert spans_of(result, "refusal_phrase") == ["cannot answer"]


def test_t1_empty_answer_fails(check_of: Check, make_resp: Make) -> None:
    assert check_of("answers_question", make_resp("   ", template="T1")).verdict == FAIL


def test_gold_answer_found_after_normalisation(check_of: Check, make_resp: Make) -> None:
    r = make_resp("His father was THE King Dasharatha, of Ayodhya.", template="T1",
                  gold_answers=[["the king dasharatha"]])
    result = check_of("answers_question", r)
    assert result.verdict == PASS
    assert spans_of(result, "gold_answer") == ["King Dasharatha"]


def test_any_alias_of_a_gold_claim_counts(check_of: Check, make_resp: Make) -> None:
    r = make_resp("Rama's mother is Kaushalya.", template="T1", gold_answers=[["Kausalya", "Kaushalya"]])
    assert check_of("answers_question", r).verdict == PASS


def test_gold_answer_missing_fails(check_of: Check, make_resp: Make) -> None:
    r = make_resp("Rama's mother is Kaikeyi.", template="T1", gold_answers=["Kausalya"])
    result = check_of("answers_question", r)
    assert (result.verdict, result.reason) == (FAIL, "none of the gold answers appears in the answer")


def test_gold_answer_must_match_whole_words(check_of: Check, make_resp: Make) -> None:
    r = make_resp("Ramachandra left.", template="T1", gold_answers=["Rama"])
    assert check_of("answers_question", r).verdict == FAIL


def test_normalize_answer_follows_spec_6() -> None:
    assert normalize_answer("  The  U.S.A.,\u2019s   an  Answer! ") == "usas answer"


# --- cites_shlokas ---------------------------------------------------------------------------------


def test_t1_with_a_citation_passes_with_its_span(check_of: Check, make_resp: Make) -> None:
    result = check_of("cites_shlokas", make_resp(CITED, template="T1"))
    assert (result.verdict, result.reason) == (PASS, "1 inline citation")
    assert [(s.start, s.end, s.text, s.kind) for s in result.spans] == [
        (CITED.index("["), CITED.index("]") + 1, "[Ayodhya-Kanda 18.1]", "citation")
    ]


@pytest.mark.parametrize("ruleset", ["legacy", "t3_aware"])
def test_t1_without_citation_fails_under_both_rulesets(check_of: Check, make_resp: Make, ruleset: str) -> None:
    r = make_resp("Rama was exiled for fourteen years.", template="T1", expected_template="T1")
    result = check_of("cites_shlokas", r, ruleset=ruleset)
    assert (result.verdict, result.reason) == (FAIL, "no inline shloka citation")


def test_lowercase_citation_does_not_count(check_of: Check, make_resp: Make) -> None:
    assert check_of("cites_shlokas", make_resp("See [ayodhya-kanda 18.1].", template="T1")).verdict == FAIL


def test_correct_t3_refusal_fails_cites_shlokas_under_legacy(check_of: Check, make_resp: Make,
                                                             good_t3: str) -> None:
    assert check_of("cites_shlokas", t3(make_resp, good_t3), ruleset="legacy").verdict == FAIL


def test_t3_cites_shlokas_is_na_under_t3_aware(check_of: Check, make_resp: Make, good_t3: str) -> None:
    result = check_of("cites_shlokas", t3(make_resp, good_t3), ruleset="t3_aware")
    assert (result.verdict, result.reason) == (NA, "citations are not required for a T3 refusal")


# --- follows_template -----------------------------------------------------------------------------


def test_t1_follows_template_when_it_cites(check_of: Check, make_resp: Make) -> None:
    assert check_of("follows_template", make_resp(CITED, template="T1")).verdict == PASS


def test_t1_does_not_follow_template_without_citation(check_of: Check, make_resp: Make) -> None:
    assert check_of("follows_template", make_resp("Rama left.", template="T1")).verdict == FAIL


def test_t2_follows_template_when_it_cites_and_interprets(check_of: Check, make_resp: Make) -> None:
    r = make_resp("His exile symbolizes duty [Ayodhya-Kanda 18.1].", template="T2")
    result = check_of("follows_template", r)
    assert result.verdict == PASS
    assert spans_of(result, "interpretation_marker") == ["symbolizes"]
    assert spans_of(result, "citation") == ["[Ayodhya-Kanda 18.1]"]


def test_t2_without_interpretation_fails(check_of: Check, make_resp: Make) -> None:
    result = check_of("follows_template", make_resp(CITED, template="T2"))
    assert (result.verdict, result.reason) == (FAIL, "T2 must cite and interpret: no interpretation marker")


def test_t2_without_citation_fails(check_of: Check, make_resp: Make) -> None:
    result = check_of("follows_template", make_resp("This suggests duty matters.", template="T2"))
    assert (result.verdict, result.reason) == (FAIL, "T2 must cite and interpret: no inline citation")


def test_t3_follows_template_when_it_refuses_and_redirects(check_of: Check, make_resp: Make,
                                                           good_t3: str) -> None:
    result = check_of("follows_template", t3(make_resp, good_t3))
    assert result.verdict == PASS
    assert spans_of(result, "redirect_phrase") == ["However, I can", "Would you like to"]


def test_t3_refusal_without_redirect_fails(check_of: Check, make_resp: Make) -> None:
    result = check_of("follows_template", t3(make_resp, "That falls outside my scope."))
    assert (result.verdict, result.reason) == (FAIL, "T3 must refuse and redirect: no redirect found")


def test_t3_redirect_without_refusal_fails(check_of: Check, make_resp: Make) -> None:
    result = check_of("follows_template", t3(make_resp, "Would you like to hear about Sita?"))
    assert (result.verdict, result.reason) == (FAIL, "T3 must refuse and redirect: no refusal found")


def test_follows_template_is_na_without_a_template(check_of: Check, make_resp: Make) -> None:
    assert check_of("follows_template", make_resp(CITED)).verdict == NA


def test_follows_template_uses_expected_template_when_bot_template_missing(check_of: Check,
                                                                          make_resp: Make) -> None:
    assert check_of("follows_template", make_resp(CITED, expected_template="T2")).verdict == FAIL


def test_follows_template_is_na_for_an_unknown_template(check_of: Check, make_resp: Make) -> None:
    result = check_of("follows_template", make_resp(CITED, template="T9"))
    assert (result.verdict, result.reason) == (NA, "unknown template 'T9'")


# --- no_hallucination -----------------------------------------------------------------------------


def test_no_hallucination_passes_when_citations_were_retrieved(check_of: Check, make_resp: Make) -> None:
    r = make_resp(CITED, template="T1", retrieved=RETRIEVED)
    assert check_of("no_hallucination", r).verdict == PASS


def test_unretrieved_citation_fails_with_its_span(check_of: Check, make_resp: Make) -> None:
    answer = CITED + " Also [Bala-Kanda 1.1]."
    result = check_of("no_hallucination", make_resp(answer, template="T1", retrieved=RETRIEVED))
    assert result.verdict == FAIL
    assert "Bala-Kanda 1.1" in result.reason
    [span] = result.spans
    assert (span.kind, span.text, answer[span.start:span.end]) == (
        "citation_not_retrieved", "[Bala-Kanda 1.1]", "[Bala-Kanda 1.1]")


@pytest.mark.parametrize("retrieved_id", ["ayodhya-kanda 18.1", "Ayodhya Kanda 18.1", "ayodhya_kanda_18_1",
                                          "Ayodhyā Kāṇḍa, sarga 18, shloka 1", "AyodhyaKanda 18.1"])
def test_citation_ids_are_normalised(check_of: Check, make_resp: Make, retrieved_id: str) -> None:
    r = make_resp(CITED, template="T1", retrieved=[(retrieved_id, "text", 0.9)])
    assert check_of("no_hallucination", r).verdict == PASS


def test_citation_key_keeps_numbers_apart() -> None:
    assert citation_key("Ayodhya-Kanda 18.1") != citation_key("Ayodhya-Kanda 1.18")


def test_unverified_proper_noun_fails(check_of: Check, make_resp: Make) -> None:
    answer = "Rama met Dandaka Forest dwellers [Ayodhya-Kanda 18.1]."
    result = check_of("no_hallucination", make_resp(answer, template="T1", retrieved=RETRIEVED))
    assert result.verdict == FAIL
    assert spans_of(result, "proper_noun") == ["Dandaka Forest"]


def test_proper_noun_found_in_retrieved_text_passes(check_of: Check, make_resp: Make) -> None:
    answer = "Rama reached the Dandaka Forest [Ayodhya-Kanda 18.1]."
    r = make_resp(answer, template="T1", retrieved=[("Ayodhya-Kanda 18.1", "Into the dandaka  forest he went.", .9)])
    assert check_of("no_hallucination", r).verdict == PASS


def test_unverified_price_fails(check_of: Check, make_resp: Make) -> None:
    r = make_resp("It costs $49/month.", retrieved=[("p", "Pro costs $29/month.", 0.9)])
    result = check_of("no_hallucination", r, profile="clearpath")
    assert result.verdict == FAIL
    assert spans_of(result, "unverified_price") == ["$49/month"]


def test_price_in_retrieved_text_passes(check_of: Check, make_resp: Make) -> None:
    r = make_resp("It costs $29 / month.", retrieved=[("p", "Pro costs $29/month.", 0.9)])
    assert check_of("no_hallucination", r, profile="clearpath").verdict == PASS


def test_a_shorter_price_inside_a_longer_one_is_not_support(check_of: Check, make_resp: Make) -> None:
    r = make_resp("It costs $29.", retrieved=[("p", "Pro costs $29.99 a month.", 0.9)])
    assert check_of("no_hallucination", r, profile="clearpath").verdict == FAIL


# --- profiles --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["routing_check", "answers_question", "cites_shlokas", "follows_template"])
def test_clearpath_marks_other_checks_not_applicable(check_of: Check, make_resp: Make, name: str) -> None:
    r = make_resp("I cannot help with that.", template="T1", expected_routing="in_scope", classification="x")
    result = check_of(name, r, profile="clearpath")
    assert (result.verdict, result.reason) == (NA, "not applicable to this bot")


def test_clearpath_still_checks_retrieval(check_of: Check, make_resp: Make) -> None:
    r = make_resp("Hello.", retrieved=[("c1", "text", 0.2)])
    assert check_of("retrieval_check", r, profile="clearpath").verdict == FAIL
