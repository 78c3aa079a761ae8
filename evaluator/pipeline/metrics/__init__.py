"""Metrics: TRUST-SCORE (``trust``, pure). Store glue lives in its own runner module."""

from evaluator.pipeline.metrics.trust import (
    TrustRow,
    TrustScore,
    answer_correctness,
    claim_supported,
    f1ac,
    f1gr,
    is_answerable,
    judge_refusals,
    normalize,
    trust_score,
)

__all__ = [
    "TrustRow",
    "TrustScore",
    "answer_correctness",
    "claim_supported",
    "f1ac",
    "f1gr",
    "is_answerable",
    "judge_refusals",
    "normalize",
    "trust_score",
]
