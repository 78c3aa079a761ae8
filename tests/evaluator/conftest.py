"""Helpers for the pure evaluator tests (types, rules, checks, flags, evaluate).

pytest runs with --import-mode=importlib, so helpers are handed out as fixtures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evaluator.core.evaluate import evaluate
from evaluator.core.types import CheckResult, GoldClaim, ResponseEvaluation, ResponseInput, RetrievedItem
from evaluator.rules.load import Rules, load_rules

# SPEC §4 examples, verbatim (with the real ellipsis the SPEC shows).
GOOD_T3 = (
    "I appreciate your question, but career advice falls outside my scope as a Ramayana interpreter. "
    "My purpose is to help you explore Valmiki's text through scholarly inquiry. However, I can help with: \u2026 "
    "Would you like to explore any of these topics instead?"
)
BAD_T3 = (
    "While career advice isn't my specialty, the Ramayana teaches us about duty through Rama's example "
    "[Ayodhya-Kanda 31.25]. He prioritized his father's word over personal ambition..."
)


@pytest.fixture(scope="session")
def rules() -> Rules:
    return load_rules()


@pytest.fixture(scope="session")
def good_t3() -> str:
    return GOOD_T3


@pytest.fixture(scope="session")
def bad_t3() -> str:
    return BAD_T3


def _item(item: Any) -> RetrievedItem:
    if isinstance(item, RetrievedItem):
        return item
    if isinstance(item, str):  # just an id, scoring well
        return RetrievedItem(item, f"text of {item}", 0.8)
    return RetrievedItem(*item)


def _claim(claim: Any) -> GoldClaim:
    if isinstance(claim, GoldClaim):
        return claim
    if isinstance(claim, str):
        return GoldClaim((claim,), None)
    return GoldClaim(tuple(claim), None)


def build_response(answer: str = "", **fields: Any) -> ResponseInput:
    """A ResponseInput with defaults; ``retrieved`` takes ids, (id, text, score) tuples or
    RetrievedItems; ``gold_answers`` takes strings, alias lists or GoldClaims."""
    fields.setdefault("question_id", "q1")
    fields.setdefault("question", "A question?")
    fields.setdefault("provider", "openai")
    fields["retrieved"] = tuple(_item(i) for i in fields.get("retrieved", ()))
    fields["gold_answers"] = tuple(_claim(c) for c in fields.get("gold_answers", ()))
    fields["expected_ids"] = tuple(fields.get("expected_ids", ()))
    return ResponseInput(answer=answer, **fields)


@pytest.fixture(scope="session")
def make_resp() -> Callable[..., ResponseInput]:
    return build_response


@pytest.fixture(scope="session")
def run(rules: Rules) -> Callable[..., ResponseEvaluation]:
    """run(resp, ruleset="t3_aware", profile="ramayana", with_spans=True, rules=default)."""

    def _run(resp: ResponseInput, ruleset: str = "t3_aware", profile: str = "ramayana",
             with_spans: bool = True, rules_: Rules | None = None) -> ResponseEvaluation:
        return evaluate(resp, ruleset=ruleset, rules=rules_ or rules, profile=profile, with_spans=with_spans)

    return _run


@pytest.fixture(scope="session")
def check_of(run: Callable[..., ResponseEvaluation]) -> Callable[..., CheckResult]:
    """check_of("cites_shlokas", resp, ruleset=..., profile=...) -> CheckResult."""

    def _check(name: str, resp: ResponseInput, **kwargs: Any) -> CheckResult:
        return run(resp, **kwargs).check(name)

    return _check


@pytest.fixture(scope="session")
def rules_text() -> str:
    from evaluator.rules.load import DEFAULT_RULES_PATH

    return DEFAULT_RULES_PATH.read_text(encoding="utf-8")
