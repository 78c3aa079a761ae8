"""Frozen value types shared by checks, flags and metrics (pure: no I/O, no UI)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

Verdict = str  # "PASS" | "FAIL" | "N/A"

PASS: Verdict = "PASS"
FAIL: Verdict = "FAIL"
NA: Verdict = "N/A"



class RegisteredNames(Sequence[str]):
    """The names of the registered checks (or flags) in display order, read from the registry
    (evaluator.core.registry) when used: each check and flag is defined once, where it is decorated.

    A view, not a copy, because the modules that register the checks import this module;
    compares equal to the tuple of the same names.
    """

    __slots__ = ("_kind",)

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def _names(self) -> tuple[str, ...]:
        from evaluator.core.registry import check_names, flag_names  # late: names asked, not imported

        return check_names() if self._kind == "check" else flag_names()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RegisteredNames):
            return self._names() == other._names()
        return isinstance(other, (tuple, list)) and self._names() == tuple(other)

    def __hash__(self) -> int:
        return hash(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


CHECK_NAMES: Sequence[str] = RegisteredNames("check")  # SPEC §4 order
FLAG_NAMES: Sequence[str] = RegisteredNames("flag")  # SPEC §5 order


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``answer[start:end]`` (== ``text``) that a check or flag points at."""

    start: int
    end: int
    text: str
    kind: str
    score: float | None = None  # how far the context supports it, 0-1 (unsupported_claim spans)
    reason: str = ""  # what was not found (unsupported_claim spans)

    def as_dict(self) -> dict[str, object]:
        """The span as stored and exported: score and reason only when it has them."""
        out: dict[str, object] = {"start": self.start, "end": self.end, "text": self.text, "kind": self.kind}
        if self.score is not None:
            out["score"] = self.score
        if self.reason:
            out["reason"] = self.reason
        return out


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
    # False when the run's file records no retrieval at all: `retrieved` is then unknown, not empty
    retrieval_recorded: bool = True


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
