"""Frozen value types shared by checks, flags and metrics (pure: no I/O, no UI)."""

from __future__ import annotations

from dataclasses import dataclass

Verdict = str  # "PASS" | "FAIL" | "N/A"

PASS: Verdict = "PASS"
FAIL: Verdict = "FAIL"
NA: Verdict = "N/A"

CHECK_NAMES: tuple[str, ...] = (
    "routing_check",
    "retrieval_check",
    "answers_question",
    "cites_shlokas",
    "follows_template",
    "no_hallucination",
)
FLAG_NAMES: tuple[str, ...] = (
    "no_context_warning",
    "refusal_detected",
    "potential_hallucination",
)


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``answer[start:end]`` (== ``text``) that a check or flag points at."""

    start: int
    end: int
    text: str
    kind: str


@dataclass(frozen=True, slots=True)
class CheckResult:
    check: str
    verdict: Verdict
    reason: str
    spans: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class FlagResult:
    flag: str
    severity: str
    spans: tuple[Span, ...] = ()


@dataclass(frozen=True, slots=True)
class RetrievedItem:
    id: str
    text: str
    score: float | None


@dataclass(frozen=True, slots=True)
class GoldClaim:
    aliases: tuple[str, ...]
    supported: bool | None


@dataclass(frozen=True, slots=True)
class ResponseInput:
    question_id: str
    question: str
    provider: str
    answer: str
    template: str | None = None
    expected_template: str | None = None
    expected_routing: str | None = None
    classification: str | None = None
    retrieved: tuple[RetrievedItem, ...] = ()
    gold_answers: tuple[GoldClaim, ...] = ()
    answerable: bool | None = None
    expected_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResponseEvaluation:
    checks: tuple[CheckResult, ...]  # always the six, in SPEC order
    flags: tuple[FlagResult, ...]  # only the flags raised, in SPEC order
    overall: Verdict  # "PASS" | "FAIL"
    is_t3: bool

    def check(self, name: str) -> CheckResult:
        """The result of check ``name`` (KeyError when unknown)."""
        for result in self.checks:
            if result.check == name:
                return result
        raise KeyError(name)

    def flag_names(self) -> tuple[str, ...]:
        return tuple(f.flag for f in self.flags)
