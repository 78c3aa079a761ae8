"""The output flags (pure), in order: annotations, never blocking. The three of SPEC §5, and
``unsupported_claim`` (issue 30), raised only under the rule sets that name it (``grounded``).

Each flag function maps a ``Context`` to a ``FlagResult`` (with the spans that caused
it) or None. Severities and banner texts come from the rules (``banner_text``).
"""

from __future__ import annotations

from evaluator.core.checks import Context
from evaluator.core.registry import flag
from evaluator.core.support import reason as support_reason
from evaluator.core.types import FlagResult, Span
from evaluator.rules.model import Rules

_CACHE: dict[tuple[str, str], FlagResult] = {}


def _flag(name: str, severity: str, spans: tuple[Span, ...] = ()) -> FlagResult:
    if spans:
        return FlagResult(name, severity, spans)
    got = _CACHE.get((name, severity))
    if got is None:
        got = _CACHE[(name, severity)] = FlagResult(name, severity)
    return got


def banner_text(rules: Rules, flag_name: str) -> str | None:
    """The banner shown for a raised flag (None: no banner)."""
    return rules.banner(flag_name)


@flag("no_context_warning", severity="warning", order=10, reads=("retrieval.min_score",), needs_retrieval=True,
      sql=lambda q: "CASE WHEN (n_scores > 0 OR n_items = 0) AND n_above = 0 THEN $sev_no_context_warning END")
def no_context_warning(ctx: Context) -> FlagResult | None:
    """Nothing was retrieved, or every scored item is below the threshold. Items without a
    score are context (issue 13): when no item carries a score, the flag is not raised."""
    scores = ctx.scores()
    if not scores and any(it is not None for it in ctx.retrieved):
        return None
    threshold = ctx.comp.rules.min_score
    if any(s >= threshold for s in scores):
        return None
    return _flag("no_context_warning", ctx.comp.severities["no_context_warning"])


@flag("refusal_detected", severity="info", order=20, reads=("flags.refusal_detected.phrases",),
      options=("phrases",), sql=lambda q: "CASE WHEN h_phrases THEN $sev_refusal_detected END")
def refusal_detected(ctx: Context) -> FlagResult | None:
    """The answer contains a refusal phrase (case-insensitive substring)."""
    found, spans = ctx.hits("refusal_phrases")
    if not found:
        return None
    return _flag("refusal_detected", ctx.comp.severities["refusal_detected"], spans)


@flag("potential_hallucination", severity="warning", order=30, reads=(
    "flags.potential_hallucination.price_pattern", "flags.potential_hallucination.proper_noun_pattern",
    "flags.potential_hallucination.exempt_question_terms", "profile.allowlist", "rulesets.proper_nouns",
    "rulesets.function_words"), options=("price_pattern", "proper_noun_pattern", "exempt_question_terms"),
      sql=lambda q: "CASE WHEN unverified IS NOT NULL THEN $sev_potential_hallucination END", needs_retrieval=True)
def potential_hallucination(ctx: Context) -> FlagResult | None:
    """A price or proper noun that the retrieved items do not contain."""
    spans = ctx.unverified()
    if not spans:
        return None
    return _flag("potential_hallucination", ctx.comp.severities["potential_hallucination"],
                 spans if ctx.with_spans else ())


@flag("unsupported_claim", severity="warning", order=40, reads=(
    "flags.unsupported_claim.min_words", "flags.unsupported_claim.max_unsupported", "flags.unsupported_claim.prefix",
    "flags.unsupported_claim.numbers", "flags.unsupported_claim.stop_words", "rulesets.extra_flags"),
      options=("min_words", "max_unsupported", "prefix", "numbers", "stop_words"),
      sql=lambda q: "CASE WHEN unsupported THEN $sev_unsupported_claim END", needs_retrieval=True, opt_in=True)
def unsupported_claim(ctx: Context) -> FlagResult | None:
    """Sentences of the answer that the retrieved items do not support (evaluator/core/support.py):
    too many of their content words, or a number, absent from every retrieved item. Each span
    carries its support score and what was not found."""
    found = ctx.unsupported_sentences()
    if not found:
        return None
    spans = tuple(Span(s.start, s.end, ctx.answer[s.start:s.end], "unsupported_claim", round(s.score, 3),
                       support_reason(s)) for s in found) if ctx.with_spans else ()
    return _flag("unsupported_claim", ctx.comp.severities["unsupported_claim"], spans)
