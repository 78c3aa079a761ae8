"""Peers' pass/fail grades as recorded verdicts: each under its own name (TOOL:NAME), and as one of
our checks where it means the same thing.

A grade maps when its name is one of our checks, or a known grader of the same question
(promptfoo's `context-faithfulness` is our `no_hallucination`; Inspect's `match` and
`model_graded_fact`, our `answers_question`). Several grades of one check combine: the check
fails when any of them fails. Grades that map to nothing stay in the response's metadata.
"""

from __future__ import annotations

import re
from typing import Any

from evaluator.core.registry import CHECK
from evaluator.core.types import CHECK_NAMES

# Peers' graders -> the check asking the same question (CHECK.x fails at import if x is renamed).
GRADER_CHECKS = {
    # promptfoo assertion types
    "context-faithfulness": CHECK.no_hallucination,
    "context-relevance": CHECK.retrieval_check,
    "context-recall": CHECK.retrieval_check,
    "answer-relevance": CHECK.answers_question,
    "factuality": CHECK.answers_question,
    "model-graded-closedqa": CHECK.answers_question,
    # Inspect scorers
    "match": CHECK.answers_question,
    "includes": CHECK.answers_question,
    "exact": CHECK.answers_question,
    "model_graded_fact": CHECK.answers_question,
    "model_graded_qa": CHECK.answers_question,
    "answer": CHECK.answers_question,
    # both, by what they measure
    "faithfulness": CHECK.no_hallucination,
    "groundedness": CHECK.no_hallucination,
    "context_relevance": CHECK.retrieval_check,
}


# A file's own verdict of a whole response (promptfoo's `success`, DeepEval's): the recorded
# evaluation's overall verdict, whatever its checks say.
RECORDED_OVERALL = "overall"
# A tool's own grade that is none of our checks, kept as a recorded check named TOOL:NAME.
GRADE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,30}:[^\x00-\x1f\x7f]{1,100}")
_GRADE_CHARS = re.compile(r"[^0-9A-Za-z_.()\[\]=,/+ -]+")


def grade_name(tool: str, name: str) -> str:
    """A tool's own grade as a recorded check name, TOOL:NAME: printable and short, whatever the
    file calls it."""
    cleaned = _GRADE_CHARS.sub("_", name).strip() or "grade"
    return f"{tool}:{cleaned[:80]}"


def is_grade_name(name: object) -> bool:
    """A tool's own grade: TOOL:NAME, printable, short (pages show it beside our checks)."""
    return isinstance(name, str) and GRADE_NAME.fullmatch(name) is not None


def check_for(*names: str | None) -> str | None:
    """The check a grade records, from its names (metric name first, then grader type)."""
    for name in names:
        if not name:
            continue
        if name in CHECK_NAMES:
            return name
        if name in GRADER_CHECKS:
            return GRADER_CHECKS[name]
    return None


# Inspect's score letters: Correct, Incorrect, Partial, No answer. Inspect's own accuracy counts
# C as 1, P as 0.5 and I and N as 0: only C passes, as in the log's own pass count.
INSPECT_LETTERS = {"C": "PASS", "I": "FAIL", "P": "FAIL", "N": "FAIL"}


def verdict_of(value: Any) -> str | None:
    """PASS / FAIL / N/A for a pass-fail grade; None for a value that is not one (a score)."""
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    if isinstance(value, int | float):
        return "PASS" if value == 1 else "FAIL" if value == 0 else None
    if isinstance(value, str):
        return INSPECT_LETTERS.get(value.strip().upper())
    return None


def record(verdicts: dict[str, str], check: str | None, own_name: str, verdict: str) -> None:
    """One grade of a tool: under its own name (TOOL:NAME), and as our check where it asks the
    same question."""
    combine(verdicts, own_name, verdict)
    if check is not None:
        combine(verdicts, check, verdict)


def combine(verdicts: dict[str, str], check: str, verdict: str) -> None:
    """Add one grade's verdict to a response's recorded checks: any FAIL fails the check."""
    previous = verdicts.get(check)
    if previous is None or previous == "N/A" or verdict == "FAIL":
        verdicts[check] = verdict
