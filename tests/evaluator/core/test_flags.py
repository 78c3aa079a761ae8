"""The three output flags of SPEC §5: when they are raised, their spans, order and texts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evaluator.core.flags import banner_text
from evaluator.core.types import FlagResult, ResponseEvaluation, ResponseInput
from evaluator.rules.load import Rules, rules_from_text

Run = Callable[..., ResponseEvaluation]
Make = Callable[..., ResponseInput]

GOOD_DOCS = [("d1", "Clearpath Pro costs $29/month and syncs with Google Drive.", 0.8)]


def flag_of(ev: ResponseEvaluation, name: str) -> FlagResult | None:
    return next((f for f in ev.flags if f.flag == name), None)


# --- no_context_warning -----------------------------------------------------------------------


def test_no_context_warning_when_nothing_retrieved(run: Run, make_resp: Make) -> None:
    flag = flag_of(run(make_resp("Hello.")), "no_context_warning")
    assert flag == FlagResult("no_context_warning", "warning", ())


def test_no_context_warning_when_every_score_is_below_threshold(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Hello.", retrieved=[("a", "t", 0.34), ("b", "t", 0.1)]))
    assert flag_of(ev, "no_context_warning") is not None


@pytest.mark.parametrize("score", [0.35, 0.9])
def test_no_context_warning_not_raised_at_or_above_threshold(run: Run, make_resp: Make, score: float) -> None:
    ev = run(make_resp("Hello.", retrieved=[("a", "t", 0.1), ("b", "t", score)]))
    assert flag_of(ev, "no_context_warning") is None


def test_no_context_warning_banner(rules: Rules) -> None:
    assert banner_text(rules, "no_context_warning") == "This response was generated without supporting documentation."


# --- refusal_detected ---------------------------------------------------------------------------


@pytest.mark.parametrize("phrase", [
    "i cannot", "i can't", "i don't have information", "i don't have enough information", "i do not have",
    "i'm not sure", "i am not sure", "i'm unable to", "i am unable to", "outside my knowledge", "beyond my scope",
    "not able to help", "cannot assist with", "no information available", "unfortunately, i don't",
    "i apologize, but i", "i'm sorry, but i don't",
])
def test_each_refusal_phrase_is_detected_with_its_span(run: Run, make_resp: Make, phrase: str) -> None:
    answer = "Well. " + phrase.upper() + " really."
    flag = flag_of(run(make_resp(answer)), "refusal_detected")
    assert flag is not None
    assert flag.severity == "info"
    assert [(s.text, s.kind) for s in flag.spans] == [(phrase.upper(), "refusal_phrase")]


def test_refusal_phrase_with_curly_apostrophe(run: Run, make_resp: Make) -> None:
    answer = "Sorry \u2014 I can\u2019t say."
    flag = flag_of(run(make_resp(answer)), "refusal_detected")
    assert flag is not None
    [span] = flag.spans
    assert (span.text, answer[span.start:span.end]) == ("I can\u2019t", "I can\u2019t")


def test_refusal_phrase_across_a_line_break(run: Run, make_resp: Make) -> None:
    assert flag_of(run(make_resp("I\ncannot do it.")), "refusal_detected") is not None


def test_no_refusal_detected_for_an_ordinary_answer(run: Run, make_resp: Make) -> None:
    assert flag_of(run(make_resp("I can tell you: Rama was the eldest son.")), "refusal_detected") is None


def test_refusal_detected_is_raised_once_with_every_span(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("I cannot say. I'm not sure either."))
    flags = [f for f in ev.flags if f.flag == "refusal_detected"]
    assert len(flags) == 1
    assert [s.text for s in flags[0].spans] == ["I cannot", "I'm not sure"]


# --- potential_hallucination ---------------------------------------------------------------------


def test_unverified_price_is_flagged(run: Run, make_resp: Make) -> None:
    answer = "Pro costs $39/month."
    flag = flag_of(run(make_resp(answer, retrieved=GOOD_DOCS), profile="clearpath"), "potential_hallucination")
    assert flag is not None
    assert flag.severity == "warning"
    [span] = flag.spans
    assert (span.kind, span.text, span.start, span.end) == ("unverified_price", "$39/month", 10, 19)


def test_supported_price_is_not_flagged(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Clearpath Pro costs $29/month.", retrieved=GOOD_DOCS), profile="clearpath")
    assert flag_of(ev, "potential_hallucination") is None


def test_unverified_proper_noun_is_flagged(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("It syncs with Microsoft Teams.", retrieved=GOOD_DOCS), profile="clearpath")
    flag = flag_of(ev, "potential_hallucination")
    assert flag is not None
    assert [(s.kind, s.text) for s in flag.spans] == [("proper_noun", "Microsoft Teams")]


def test_supported_proper_noun_is_not_flagged(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("It syncs with Google Drive.", retrieved=GOOD_DOCS), profile="clearpath")
    assert flag_of(ev, "potential_hallucination") is None


def test_single_capitalised_word_is_no_proper_noun(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Zoom works too.", retrieved=GOOD_DOCS), profile="clearpath")
    assert flag_of(ev, "potential_hallucination") is None


def test_allowlisted_name_is_never_flagged_for_its_bot(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Welcome. Clearpath Assistant here.", retrieved=[("d", "nothing", 0.9)]),
             profile="clearpath")
    assert flag_of(ev, "potential_hallucination") is None


def test_allowlist_is_per_bot(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Welcome. Clearpath Assistant here.", retrieved=[("d", "nothing", 0.9)]),
             profile="ramayana")
    assert flag_of(ev, "potential_hallucination") is not None


def test_terms_from_the_question_are_not_flagged_by_default(run: Run, make_resp: Make) -> None:
    r = make_resp("Microsoft Teams is not supported; $5/month is not a plan.", retrieved=GOOD_DOCS,
                  question="Does it work with microsoft teams for $5/month?")
    assert flag_of(run(r, profile="clearpath"), "potential_hallucination") is None


def test_question_exemption_can_be_turned_off(run: Run, make_resp: Make, rules_text: str) -> None:
    strict = rules_from_text(rules_text.replace("exempt_question_terms = true", "exempt_question_terms = false"))
    r = make_resp("Microsoft Teams is not supported.", retrieved=GOOD_DOCS,
                  question="Does it work with Microsoft Teams?")
    flag = flag_of(run(r, profile="clearpath", rules_=strict), "potential_hallucination")
    assert flag is not None
    assert [s.text for s in flag.spans] == ["Microsoft Teams"]


def test_potential_hallucination_banner(rules: Rules) -> None:
    assert banner_text(rules, "potential_hallucination") == (
        "Some details in this response could not be verified against our documentation."
    )


# --- order and scope ------------------------------------------------------------------------------


def test_flags_come_in_spec_order(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("I cannot confirm; Microsoft Teams costs $9/month."), profile="clearpath")
    assert ev.flag_names() == ("no_context_warning", "refusal_detected", "potential_hallucination")


def test_flags_run_for_every_profile(run: Run, make_resp: Make) -> None:
    r = make_resp("I cannot say.")
    for profile in ("ramayana", "clearpath"):
        assert run(r, profile=profile).flag_names() == ("no_context_warning", "refusal_detected")


def test_flags_do_not_change_the_overall_verdict(run: Run, make_resp: Make, good_t3: str) -> None:
    ev = run(make_resp(good_t3, template="T3", expected_template="T3"))
    assert flag_of(ev, "no_context_warning") is not None
    assert ev.overall == "PASS"


# --- unsupported_claim (issue 30) ---------------------------------------------------------------

POSEIDON = [("d1", "Poseidon grossed $ 181,674,817 at the worldwide box office on a budget of $ 160 million.", 0.9)]
MADE_UP = "Poseidon grossed $181,674,817 worldwide. Critics praised its stunning visual effects."


@pytest.mark.parametrize("profile", ["ramayana", "clearpath", "rag"])
def test_unsupported_claim_is_raised_under_grounded_for_every_profile(run: Run, make_resp: Make, profile: str) -> None:
    flag = flag_of(run(make_resp(MADE_UP, retrieved=POSEIDON), ruleset="grounded", profile=profile),
                   "unsupported_claim")
    assert flag is not None and flag.severity == "warning"


@pytest.mark.parametrize("ruleset", ["legacy", "t3_aware", "refined"])
def test_unsupported_claim_is_never_raised_under_the_seed_rule_sets(run: Run, make_resp: Make, ruleset: str) -> None:
    assert flag_of(run(make_resp(MADE_UP, retrieved=POSEIDON), ruleset=ruleset), "unsupported_claim") is None


def test_unsupported_claim_marks_the_unsupported_sentence_with_its_score_and_reason(run: Run, make_resp: Make) -> None:
    flag = flag_of(run(make_resp(MADE_UP, retrieved=POSEIDON), ruleset="grounded"), "unsupported_claim")
    assert flag is not None
    [span] = flag.spans
    assert (span.text, span.kind) == ("Critics praised its stunning visual effects.", "unsupported_claim")
    assert span.score == 0.0
    assert span.reason == ("5 of 5 content words not in the retrieved context: 'critics', 'praised', 'stunning', "
                           "'visual', 'effects'")


def test_unsupported_claim_is_not_raised_when_the_context_holds_every_sentence(run: Run, make_resp: Make) -> None:
    answer = "Poseidon grossed $181,674,817 at the worldwide box office. Its budget was $160 million."
    assert flag_of(run(make_resp(answer, retrieved=POSEIDON), ruleset="grounded"), "unsupported_claim") is None


def test_unsupported_claim_is_not_raised_when_the_run_records_no_retrieval(run: Run, make_resp: Make) -> None:
    resp = make_resp(MADE_UP, retrieval_recorded=False)
    assert flag_of(run(resp, ruleset="grounded"), "unsupported_claim") is None


def test_unsupported_claim_decides_the_same_without_spans(run: Run, make_resp: Make) -> None:
    answers = [MADE_UP, "Poseidon had a budget of $170 million.", "Poseidon grossed $181,674,817."]
    for answer in answers:
        resp = make_resp(answer, retrieved=POSEIDON)
        with_spans = flag_of(run(resp, ruleset="grounded"), "unsupported_claim")
        without = flag_of(run(resp, ruleset="grounded", with_spans=False), "unsupported_claim")
        assert (with_spans is None) == (without is None), answer


def test_a_span_is_stored_with_its_score_and_reason_only_when_it_has_them() -> None:
    from evaluator.core.types import Span

    assert Span(0, 3, "abc", "proper_noun").as_dict() == {"start": 0, "end": 3, "text": "abc", "kind": "proper_noun"}
    assert Span(0, 3, "abc", "unsupported_claim", 0.25, "why").as_dict() == {
        "start": 0, "end": 3, "text": "abc", "kind": "unsupported_claim", "score": 0.25, "reason": "why"}
