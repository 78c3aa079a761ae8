"""evaluate / evaluate_batch: overall verdicts, rule sets, profiles, robustness, registry."""

from __future__ import annotations

import csv
import json
import pickle
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import evaluator.core.evaluate as evaluate_module
from evaluator.core.evaluate import evaluate, evaluate_batch
from evaluator.core.registry import Registry, check_names, flag_names
from evaluator.core.types import (
    CHECK_NAMES,
    FAIL,
    FLAG_NAMES,
    NA,
    PASS,
    GoldClaim,
    ResponseEvaluation,
    ResponseInput,
    RetrievedItem,
)
from evaluator.rules.load import Rules

Run = Callable[..., ResponseEvaluation]
Make = Callable[..., ResponseInput]

DATA = Path(__file__).resolve().parents[3] / "data"
T1_OK = "Rama was exiled for fourteen years [Ayodhya-Kanda 18.1]."
DOCS = [("Ayodhya-Kanda 18.1", "Rama goes to the forest for fourteen years.", 0.8)]


def verdicts(ev: ResponseEvaluation) -> dict[str, str]:
    return {c.check: c.verdict for c in ev.checks}


def summary(ev: ResponseEvaluation) -> tuple[object, ...]:
    return (tuple((c.check, c.verdict, c.reason) for c in ev.checks),
            tuple((f.flag, f.severity) for f in ev.flags), ev.overall, ev.is_t3)


# --- shape and overall ----------------------------------------------------------------------------


def test_six_checks_in_spec_order(run: Run, make_resp: Make) -> None:
    assert tuple(c.check for c in run(make_resp("x")).checks) == CHECK_NAMES


def test_overall_passes_when_every_applicable_check_passes(run: Run, make_resp: Make) -> None:
    r = make_resp(T1_OK, template="T1", expected_template="T1", retrieved=DOCS)
    ev = run(r)
    assert ev.overall == PASS
    assert set(verdicts(ev).values()) == {PASS}


def test_na_checks_do_not_fail_overall(run: Run, make_resp: Make) -> None:
    ev = run(make_resp(T1_OK, template="T1", retrieved=DOCS))  # routing: nothing expected -> N/A
    assert verdicts(ev)["routing_check"] == NA
    assert ev.overall == PASS


def test_one_failing_check_fails_overall(run: Run, make_resp: Make) -> None:
    ev = run(make_resp("Rama was exiled.", template="T1", expected_template="T1", retrieved=DOCS))
    assert ev.overall == FAIL


# --- the T3 fix -----------------------------------------------------------------------------------


def t3(make_resp: Make, answer: str) -> ResponseInput:
    return make_resp(answer, template="T3", expected_template="T3", expected_routing="out_of_scope",
                     classification="out_of_scope")


def test_good_t3_passes_under_t3_aware(run: Run, make_resp: Make, good_t3: str) -> None:
    ev = run(t3(make_resp, good_t3), ruleset="t3_aware")
    assert ev.is_t3
    assert ev.overall == PASS
    assert verdicts(ev) == {"routing_check": PASS, "retrieval_check": NA, "answers_question": PASS,
                            "cites_shlokas": NA, "follows_template": PASS, "no_hallucination": PASS}


def test_good_t3_fails_under_legacy_only_on_retrieval_and_citations(run: Run, make_resp: Make,
                                                                    good_t3: str) -> None:
    ev = run(t3(make_resp, good_t3), ruleset="legacy")
    assert ev.overall == FAIL
    assert {k for k, v in verdicts(ev).items() if v == FAIL} == {"retrieval_check", "cites_shlokas"}


def test_bad_t3_fails_under_t3_aware(run: Run, make_resp: Make, bad_t3: str) -> None:
    ev = run(t3(make_resp, bad_t3), ruleset="t3_aware")
    assert ev.overall == FAIL
    assert {k for k, v in verdicts(ev).items() if v == FAIL} == {
        "answers_question", "follows_template", "no_hallucination"}


@pytest.mark.parametrize("answer", [T1_OK, "Rama was exiled.", "I cannot answer that."])
def test_t1_verdicts_do_not_depend_on_the_rule_set(run: Run, make_resp: Make, answer: str) -> None:
    r = make_resp(answer, template="T1", expected_template="T1", retrieved=DOCS)
    assert summary(run(r, ruleset="legacy")) == summary(run(r, ruleset="t3_aware"))


def test_unknown_ruleset_is_a_value_error(make_resp: Make, rules: Rules) -> None:
    with pytest.raises(ValueError, match="unknown rule set 'newest'"):
        evaluate(make_resp("x"), ruleset="newest", rules=rules, profile="ramayana")


def test_unknown_profile_is_a_value_error(make_resp: Make, rules: Rules) -> None:
    with pytest.raises(ValueError, match="unknown profile 'chatty'"):
        evaluate_batch([make_resp("x")], ruleset="legacy", rules=rules, profile="chatty")


# --- batch == single --------------------------------------------------------------------------------


def varied(make_resp: Make, good_t3: str, bad_t3: str) -> list[ResponseInput]:
    return [
        make_resp(T1_OK, template="T1", expected_template="T1", retrieved=DOCS),
        make_resp("Rama was exiled.", template="T1", retrieved=DOCS, gold_answers=["fourteen years"]),
        make_resp("For fourteen years; this symbolizes duty [Bala-Kanda 1.1].", template="T2", retrieved=DOCS,
                  gold_answers=["fourteen years"]),
        t3(make_resp, good_t3),
        t3(make_resp, bad_t3),
        t3(make_resp, "I can\u2019t help. Microsoft Teams costs $5/month."),
        make_resp("", template="T2"),
        make_resp("Clearpath Pro costs $29/month.", retrieved=[("c", "Clearpath Pro: $29/month", 0.5)]),
    ]


@pytest.mark.parametrize("ruleset", ["legacy", "t3_aware"])
@pytest.mark.parametrize("profile", ["ramayana", "clearpath"])
def test_batch_verdicts_equal_single_verdicts(make_resp: Make, rules: Rules, good_t3: str, bad_t3: str,
                                              ruleset: str, profile: str) -> None:
    resps = varied(make_resp, good_t3, bad_t3)
    batch = evaluate_batch(resps, ruleset=ruleset, rules=rules, profile=profile)
    single = [evaluate(r, ruleset=ruleset, rules=rules, profile=profile) for r in resps]
    assert [summary(b) for b in batch] == [summary(s) for s in single]


def test_batch_results_carry_no_spans(make_resp: Make, rules: Rules, good_t3: str, bad_t3: str) -> None:
    batch = evaluate_batch(varied(make_resp, good_t3, bad_t3), ruleset="t3_aware", rules=rules, profile="ramayana")
    assert all(not c.spans for ev in batch for c in ev.checks)
    assert all(not f.spans for ev in batch for f in ev.flags)


def test_evaluate_without_spans_matches_batch(make_resp: Make, rules: Rules, bad_t3: str) -> None:
    r = t3(make_resp, bad_t3)
    one = evaluate(r, ruleset="t3_aware", rules=rules, profile="ramayana", with_spans=False)
    [batch] = evaluate_batch([r], ruleset="t3_aware", rules=rules, profile="ramayana")
    assert one == batch


def test_batch_accepts_any_iterable(make_resp: Make, rules: Rules) -> None:
    out = evaluate_batch((make_resp("x") for _ in range(3)), ruleset="legacy", rules=rules, profile="ramayana")
    assert len(out) == 3


def test_results_survive_pickling(run: Run, make_resp: Make, bad_t3: str) -> None:
    ev = run(t3(make_resp, bad_t3))
    assert pickle.loads(pickle.dumps(ev)) == ev


# --- robustness ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    "",
    "\x00\ud7ff\U0010ffff",
    "\u0130\u0131\u017f\u212a \u03a3\u03c3\u03c2 \u0345",
    "<script>alert(1)</script> [Ayodhya-Kanda 1.1",
    "$" * 1000,
    "\u2019" * 50,
])
def test_odd_answers_never_raise(run: Run, make_resp: Make, answer: str) -> None:
    for ruleset in ("legacy", "t3_aware"):
        ev = run(make_resp(answer, template="T2", expected_template="T3"), ruleset=ruleset)
        assert all(c.verdict in (PASS, FAIL, NA) for c in ev.checks)
        assert not any(c.reason.startswith("could not evaluate") for c in ev.checks)


def test_odd_optional_fields_never_raise(run: Run) -> None:
    r = ResponseInput(
        question_id="q", question=None, provider="p", answer="Rama [Bala-Kanda 1.1] $5 Lord Rama",  # type: ignore[arg-type]
        template=" t1 ", retrieved=(RetrievedItem(None, None, None), RetrievedItem("x", "y", True),  # type: ignore[arg-type]
                                    RetrievedItem("Bala-Kanda 1.1", "Lord Rama", float("nan"))),
        gold_answers=(GoldClaim((), None), GoldClaim(("",), True)), expected_ids=("",),
    )
    ev = run(r)
    assert not any(c.reason.startswith("could not evaluate") for c in ev.checks)


@pytest.mark.parametrize("make_text", [
    lambda n: ("Rama went to the Dandaka Forest and I cannot say more. " * (n // 55 + 1))[:n],
    lambda n: "[" + "a-" * (n // 2),
    lambda n: "Aa " * (n // 3) + "9",
    lambda n: "$" + "1" * n,
    lambda n: "i " * (n // 2),
    lambda n: " " * n + "x",
])
def test_one_megabyte_answers_are_evaluated_quickly(run: Run, make_resp: Make, make_text: Callable[[int], str],
                                                    rules: Rules) -> None:
    answer = make_text(1_000_000)
    r = make_resp(answer, template="T2", retrieved=DOCS, gold_answers=["Dandaka Forest"],
                  question="Where is the Dandaka Forest?")
    started = time.perf_counter()
    ev = run(r)
    [batch] = evaluate_batch([r], ruleset="t3_aware", rules=rules, profile="ramayana")
    assert time.perf_counter() - started < 20
    assert summary(ev) == summary(batch)
    for c in ev.checks:
        assert all(answer[s.start:s.end] == s.text for s in c.spans)


def test_a_crashing_check_fails_with_a_reason_instead_of_raising(monkeypatch: pytest.MonkeyPatch, run: Run,
                                                                 make_resp: Make) -> None:
    def broken(ctx: object) -> None:
        raise RuntimeError("boom")

    real = evaluate_module.get_check
    monkeypatch.setattr(evaluate_module, "get_check",
                        lambda name: broken if name == "cites_shlokas" else real(name))
    result = run(make_resp(T1_OK, template="T1")).check("cites_shlokas")
    assert (result.verdict, result.reason) == (FAIL, "could not evaluate: RuntimeError: boom")


# --- registry -----------------------------------------------------------------------------------------


def test_all_checks_and_flags_are_registered() -> None:
    assert check_names() == CHECK_NAMES
    assert flag_names() == FLAG_NAMES


def test_registering_a_duplicate_name_raises() -> None:
    reg = Registry()
    reg.check("x")(lambda ctx: None)
    with pytest.raises(ValueError, match="check 'x' is already registered"):
        reg.check("x")(lambda ctx: None)


def test_the_same_name_may_be_a_check_and_a_metric() -> None:
    reg = Registry()
    reg.check("x")(lambda ctx: None)
    reg.metric("x", granularity="dataset")(lambda rows: 0.0)
    assert reg.entry("metric", "x").granularity == "dataset"


def test_metric_granularity_is_validated() -> None:
    with pytest.raises(ValueError, match="granularity must be 'query' or 'dataset'"):
        Registry().metric("m", granularity="row")


def test_looking_up_an_unknown_name_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no flag named 'nope'"):
        Registry().get("flag", "nope")


def test_metric_names_filter_by_granularity() -> None:
    reg = Registry()
    reg.metric("a", granularity="query")(lambda r: 0)
    reg.metric("b", granularity="dataset")(lambda r: 0)
    assert (reg.names("metric", granularity="dataset"), reg.names("metric")) == (("b",), ("a", "b"))


# --- the SPEC's sample story -----------------------------------------------------------------------------


def _golden_t3() -> list[ResponseInput]:
    path = DATA / "ramayana_golden.csv"  # committed sample data: a missing file must fail, not skip
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["expected_template"] == "T3"]
    out = []
    for row in rows:
        for provider in ("openai", "claude"):
            out.append(ResponseInput(
                question_id=row["question_id"], question=row["question"], provider=provider,
                answer=row[f"{provider}_answer"], template=row[f"{provider}_template"] or None,
                expected_template="T3", expected_routing=row["expected_routing"] or None,
                classification=row[f"{provider}_classification"] or None,
                retrieved=tuple(RetrievedItem(i["id"], i["text"], i.get("score"))
                                for i in json.loads(row[f"{provider}_retrieved"] or "[]")),
            ))
    return out


def test_sample_t3_answers_all_pass_under_t3_aware(rules: Rules) -> None:
    resps = _golden_t3()
    assert len(resps) == 16
    out = evaluate_batch(resps, ruleset="t3_aware", rules=rules, profile="ramayana")
    assert [e.overall for e in out] == [PASS] * 16


def test_sample_t3_answers_fail_cites_shlokas_under_legacy(rules: Rules) -> None:
    out = evaluate_batch(_golden_t3(), ruleset="legacy", rules=rules, profile="ramayana")
    assert all(e.check("cites_shlokas").verdict == FAIL for e in out)


# --- the registry is the one definition of the checks and flags (issue 16) ---------------------------------


def test_check_names_follow_the_registered_display_order_not_registration_order() -> None:
    reg = Registry()
    reg.check("late", order=20)(lambda ctx: None)
    reg.check("early", order=10)(lambda ctx: None)
    assert reg.names("check") == ("early", "late")


def test_the_builtin_checks_are_in_spec_order() -> None:
    assert tuple(CHECK_NAMES) == ("routing_check", "retrieval_check", "answers_question", "cites_shlokas",
                                  "follows_template", "no_hallucination")
    assert tuple(FLAG_NAMES) == ("no_context_warning", "refusal_detected", "potential_hallucination",
                                 "unsupported_claim")


def test_check_names_is_a_view_of_the_registry() -> None:
    from evaluator.core.registry import REGISTRY

    REGISTRY.check("zz_plugin_check", order=1000)(lambda ctx: None)
    try:
        assert CHECK_NAMES[-1] == "zz_plugin_check" and "zz_plugin_check" in CHECK_NAMES
    finally:
        REGISTRY.unregister("check", "zz_plugin_check")
    assert "zz_plugin_check" not in CHECK_NAMES


def test_flags_carry_their_default_severity_and_options() -> None:
    from evaluator.core.registry import flag_entries, flag_options

    assert {e.name: e.severity for e in flag_entries()} == {
        "no_context_warning": "warning", "refusal_detected": "info", "potential_hallucination": "warning",
        "unsupported_claim": "warning"}
    assert flag_options("potential_hallucination") == {"price_pattern", "proper_noun_pattern",
                                                       "exempt_question_terms"}


def test_checks_declare_the_rule_options_they_read() -> None:
    from evaluator.core.registry import check_entries

    reads = {e.name: e.reads for e in check_entries()}
    assert "retrieval.min_score" in reads["retrieval_check"]
    assert "profile.citation_pattern" in reads["cites_shlokas"]


def test_a_flag_without_a_known_severity_is_refused() -> None:
    with pytest.raises(ValueError, match="severity must be one of info, warning, error"):
        Registry().flag("f", severity="loud")(lambda ctx: None)


def test_a_name_that_is_not_an_identifier_is_refused() -> None:
    with pytest.raises(ValueError, match="must be an ASCII identifier"):
        Registry().check("x'; DROP TABLE runs; --")(lambda ctx: None)
