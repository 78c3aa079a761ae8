"""Refusal judges (SPEC §6): ``heuristic`` (default, offline) and ``llm`` (OpenAI-compatible); and the
optional LLM span judge (``LLMSpanJudge``, issue 30 §3) over the same endpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaluator.pipeline.judges.base import (
    InMemoryJudgeCache,
    Judge,
    JudgeCache,
    JudgeConfigError,
    JudgeError,
    JudgeReplyError,
    JudgeUnavailableError,
    JudgeVerdict,
)
from evaluator.pipeline.judges.heuristic import REFERENCE_REFUSAL_FLAG, HeuristicJudge
from evaluator.pipeline.judges.llm import LLMJudge
from evaluator.pipeline.judges.llm_spans import LLMSpanJudge, SpanVerdict

if TYPE_CHECKING:
    from evaluator.rules.load import Rules

JUDGE_NAMES = ("heuristic", "llm")


def make_judge(
    name: str, *, rules: Rules | None = None, cache: JudgeCache | None = None, **kwargs: Any
) -> Judge:
    """The judge called ``name``: ``heuristic`` from ``rules`` (default rules when None),
    ``llm`` from keyword arguments / environment with ``cache``."""
    if name == "heuristic":
        return HeuristicJudge.from_rules(rules, **kwargs)
    if name == "llm":
        return LLMJudge(cache=cache, **kwargs)
    raise JudgeConfigError(f"unknown judge {name!r}; expected one of {', '.join(JUDGE_NAMES)}")


__all__ = [
    "JUDGE_NAMES",
    "REFERENCE_REFUSAL_FLAG",
    "HeuristicJudge",
    "InMemoryJudgeCache",
    "Judge",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeError",
    "JudgeReplyError",
    "JudgeUnavailableError",
    "JudgeVerdict",
    "LLMJudge",
    "LLMSpanJudge",
    "SpanVerdict",
    "make_judge",
]
