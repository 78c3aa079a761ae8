"""Peers' pass/fail grades as recorded verdicts: each under its own name (TOOL:NAME), and as one of
our checks where it means the same thing.

A grade maps when its name is one of our checks, or a known grader of the same question
(promptfoo's `context-faithfulness` is our `no_hallucination`; Inspect's `match` and
`model_graded_fact`, our `answers_question`). Several grades of one check combine: the check
fails when any of them fails. Grades that map to nothing stay in the response's metadata.
"""

from __future__ import annotations

from typing import Any

from evaluator.registry import CHECK
from evaluator.types import CHECK_NAMES

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


# Inspect's score letters: Correct, Incorrect, Partial, No answer.
INSPECT_LETTERS = {"C": "PASS", "I": "FAIL", "P": "FAIL", "N": "N/A"}


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
