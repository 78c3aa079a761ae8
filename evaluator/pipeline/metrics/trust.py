"""TRUST-SCORE dataset metrics (SPEC §6): F1GR (grounded refusal) and F1AC (answer correctness).

Pure: no duckdb, no streamlit. Computed over one run of one provider: ``question_id`` is the
key of the refusal decisions and must be unique among the responses.

Answerability follows SPEC §6 in the reading that reproduces the reference figures: the
``answerable`` flag when recorded; else, when the question has gold claims, whether any is
supported; else (no gold claims to decide by) whether the question is not T3.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from evaluator.core.registry import metric
from evaluator.core.types import GoldClaim, ResponseInput, RetrievedItem
from evaluator.pipeline.judges.base import Judge, JudgeVerdict

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCT = frozenset(string.punctuation)


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


class _PunctuationTable(dict[int, int | None]):
    """str.translate table deleting punctuation (ASCII, and Unicode category P*); each code
    point is classified once, then looked up in C (a per-character Python loop was 40% of
    a metrics run)."""

    def __missing__(self, codepoint: int) -> int | None:
        value = None if _is_punct(chr(codepoint)) else codepoint
        self[codepoint] = value
        return value


_DELETE_PUNCTUATION = _PunctuationTable()


@functools.lru_cache(maxsize=1 << 16)  # retrieved chunks repeat across responses
def normalize(text: str) -> str:
    """Lower-case, punctuation removed, articles a/an/the removed, white space folded."""
    text = text.lower().translate(_DELETE_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def occurs(alias: str, normalized_text: str) -> bool:
    """Whether ``alias`` occurs, normalized and on word boundaries, in already-normalized text.
    An alias that normalizes to nothing (e.g. "the") never occurs."""
    needle = normalize(alias)
    return bool(needle) and f" {needle} " in f" {normalized_text} "


def claim_occurs(claim: GoldClaim, normalized_text: str) -> bool:
    return any(occurs(alias, normalized_text) for alias in claim.aliases)


def claim_supported(claim: GoldClaim, retrieved: Iterable[RetrievedItem]) -> bool:
    """The claim's ``supported`` flag, else whether an alias occurs in some retrieved text."""
    if claim.supported is not None:
        return claim.supported
    return any(claim_occurs(claim, normalize(item.text)) for item in retrieved)


def is_t3(resp: ResponseInput) -> bool:
    return resp.template == "T3" or resp.expected_template == "T3"


def supported_claims(resp: ResponseInput) -> tuple[GoldClaim, ...]:
    return tuple(c for c in resp.gold_answers if claim_supported(c, resp.retrieved))


@metric("answerable", granularity="query")
def is_answerable(resp: ResponseInput) -> bool:
    """SPEC §6 answerability (see the module docstring for the no-gold-claims case)."""
    if resp.answerable is not None:
        return resp.answerable
    if resp.gold_answers:
        return bool(supported_claims(resp))
    return not is_t3(resp)


@metric("ac_q", granularity="query")
def answer_correctness(resp: ResponseInput, *, refused: bool, answerable: bool) -> float:
    """AC_q: share of the supported claims found in the answer, for answered answerable
    questions; 0 otherwise (and when there is no supported claim)."""
    if refused or not answerable:
        return 0.0
    claims = supported_claims(resp)
    if not claims:
        return 0.0
    answer = normalize(resp.answer)
    return sum(claim_occurs(c, answer) for c in claims) / len(claims)


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _f1(p: float, r: float) -> float:
    return _ratio(2 * p * r, p + r)


@dataclass(frozen=True)
class TrustRow:
    question_id: str
    refused: bool
    refused_by: str  # "judge" | "reviewer"
    answerable: bool
    ac_q: float


@dataclass(frozen=True)
class TrustScore:
    f1gr: float
    f1_ref: float
    p_ref: float
    r_ref: float
    f1_ans: float
    p_ans: float
    r_ans: float
    f1ac: float
    p_ac: float
    r_ac: float
    n_answered: int
    n_refused: int
    n_answerable: int
    n_unanswerable: int
    n_refused_unanswerable: int  # with the four counts above: the refusal confusion matrix
    n_answered_answerable: int
    rows: tuple[TrustRow, ...]

    def components(self) -> dict[str, Any]:
        """Every figure except the rows (for ``metric_results.components``)."""
        out = asdict(self)
        del out["rows"]
        return out


def trust_score(
    responses: Sequence[ResponseInput],
    refusals: Mapping[str, bool | JudgeVerdict],
    overrides: Mapping[str, bool] | None = None,
) -> TrustScore:
    """F1GR and F1AC over ``responses`` (one provider of one run).

    ``refusals`` maps question_id -> the judge's decision (a bool or a ``JudgeVerdict``, as
    ``judge_refusals`` returns); ``overrides`` maps question_id ->
    a reviewer's decision on *refused*, which wins over the judge. Every response needs one
    of the two; a zero denominator gives 0.
    """
    overrides = overrides or {}
    seen: set[str] = set()
    rows: list[TrustRow] = []
    for resp in responses:
        qid = resp.question_id
        if qid in seen:
            raise ValueError(f"question_id {qid!r} occurs twice; compute one provider at a time")
        seen.add(qid)
        if qid in overrides:
            refused, by = bool(overrides[qid]), "reviewer"
        elif qid in refusals:
            decision = refusals[qid]
            refused = decision.refused if isinstance(decision, JudgeVerdict) else bool(decision)
            by = "judge"
        else:
            raise KeyError(f"no refusal decision for question_id {qid!r}")
        answerable = is_answerable(resp)
        ac = answer_correctness(resp, refused=refused, answerable=answerable)
        rows.append(TrustRow(qid, refused, by, answerable, ac))
    return _score(rows)


@metric("f1gr", granularity="dataset")
def f1gr(rows: Sequence[TrustRow]) -> float:
    """Grounded refusal: mean of F1_ref and F1_ans over the per-response rows."""
    return _score(rows).f1gr


@metric("f1ac", granularity="dataset")
def f1ac(rows: Sequence[TrustRow]) -> float:
    """Answer correctness: harmonic mean of P_AC and R_AC over the per-response rows."""
    return _score(rows).f1ac


def judge_refusals(responses: Iterable[ResponseInput], judge: Judge) -> dict[str, JudgeVerdict]:
    """question_id -> the judge's verdict, for ``trust_score``'s ``refusals`` (use ``.refused``)."""
    return {r.question_id: judge.judge(r.question, r.answer) for r in responses}


def _score(rows: Sequence[TrustRow]) -> TrustScore:
    return score_from_counts(
        n=len(rows),
        n_refused=sum(r.refused for r in rows),
        n_answerable=sum(r.answerable for r in rows),
        ref_ok=sum(r.refused and not r.answerable for r in rows),
        ans_ok=sum(not r.refused and r.answerable for r in rows),
        ac_sum=sum(r.ac_q for r in rows),
        rows=tuple(rows),
    )


def score_from_counts(*, n: int, n_refused: int, n_answerable: int, ref_ok: int, ans_ok: int, ac_sum: float,
                      rows: tuple[TrustRow, ...] = ()) -> TrustScore:
    """The figures from the confusion counts and the sum of AC_q (summed in row order, as
    ``sum`` does, for the same float). The SQL engine aggregates these without the rows."""
    n_answered = n - n_refused
    n_unanswerable = n - n_answerable
    p_ref, r_ref = _ratio(ref_ok, n_refused), _ratio(ref_ok, n_unanswerable)
    p_ans, r_ans = _ratio(ans_ok, n_answered), _ratio(ans_ok, n_answerable)
    f1_ref, f1_ans = _f1(p_ref, r_ref), _f1(p_ans, r_ans)
    p_ac, r_ac = _ratio(ac_sum, n_answered), _ratio(ac_sum, n_answerable)
    return TrustScore(
        f1gr=(f1_ref + f1_ans) / 2,
        f1_ref=f1_ref,
        p_ref=p_ref,
        r_ref=r_ref,
        f1_ans=f1_ans,
        p_ans=p_ans,
        r_ans=r_ans,
        f1ac=_f1(p_ac, r_ac),
        p_ac=p_ac,
        r_ac=r_ac,
        n_answered=n_answered,
        n_refused=n_refused,
        n_answerable=n_answerable,
        n_unanswerable=n_unanswerable,
        n_refused_unanswerable=ref_ok,
        n_answered_answerable=ans_ok,
        rows=rows,
    )
