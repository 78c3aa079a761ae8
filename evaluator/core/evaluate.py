"""Per-response and batch evaluation (pure): the six checks and the three flags.

``evaluate`` gives spans (for the triage and review pages); ``evaluate_batch`` is the
fast verdict-only path for recomputing whole runs: the same verdicts and reasons,
no spans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from evaluator.core.checks import Context, result
from evaluator.core.registry import NO_RETRIEVAL_REASON, REGISTRY, get_check, get_flag
from evaluator.core.types import (
    CHECK_NAMES,
    FAIL,
    FLAG_NAMES,
    NA,
    PASS,
    CheckResult,
    FlagResult,
    ResponseEvaluation,
    ResponseInput,
)
from evaluator.rules.matchers import CompiledProfile, CompiledRules, compiled
from evaluator.rules.model import Rules

# (compiled rules, profile, checks N/A for a T3 refusal, (check name, its function or None when the
# profile does not apply it, whether it needs the retrieved items) per check, (flag function, whether
# it needs the retrieved items) per flag, the refined rule's function words)
_Plan = tuple[CompiledRules, CompiledProfile, frozenset[str],
              tuple[tuple[str, Callable[..., Any] | None, bool], ...],
              tuple[tuple[Callable[..., Any], bool], ...], frozenset[str] | None]


def _plan(ruleset: str, rules: Rules, profile: str) -> _Plan:
    comp = compiled(rules)
    prof = comp.profile(profile)
    t3_na = comp.t3_not_applicable(ruleset)
    check_fns = tuple((name, get_check(name) if name in prof.checks else None,
                       REGISTRY.entry("check", name).needs_retrieval) for name in CHECK_NAMES)
    extra = frozenset(rules.ruleset(ruleset).extra_flags)  # opt-in flags: only where the rule set names them
    flag_fns = tuple((get_flag(name), REGISTRY.entry("flag", name).needs_retrieval) for name in FLAG_NAMES
                     if not REGISTRY.entry("flag", name).opt_in or name in extra)
    return comp, prof, t3_na, check_fns, flag_fns, comp.refined_nouns(ruleset)


def _run_check(name: str, fn: Callable[..., Any], ctx: Context) -> CheckResult:
    try:
        out: CheckResult = fn(ctx)
        return out
    except Exception as exc:  # noqa: BLE001 - a check never takes the evaluation down
        return result(name, FAIL, f"could not evaluate: {type(exc).__name__}: {exc}"[:200])


def _run_flag(fn: Callable[..., Any], ctx: Context) -> FlagResult | None:
    try:
        out: FlagResult | None = fn(ctx)
        return out
    except Exception:  # noqa: BLE001 - flags are annotations; a broken one is not raised
        return None


def _evaluate(resp: ResponseInput, plan: _Plan, with_spans: bool) -> ResponseEvaluation:
    comp, prof, t3_na, check_fns, flag_fns, function_words = plan
    ctx = Context(resp, comp, prof, t3_na, with_spans, function_words)
    not_applicable = prof.profile.not_applicable_reason
    # A run that records no retrieval: what the retrieved items decide is unknown, not "nothing was
    # retrieved" (issue 28). Such checks are N/A and such flags are not raised, whatever they are.
    unknown = resp.retrieval_recorded is False
    results = tuple([
        result(name, NA, not_applicable) if fn is None
        else result(name, NA, NO_RETRIEVAL_REASON) if unknown and needs
        else _run_check(name, fn, ctx)
        for name, fn, needs in check_fns
    ])
    raised = tuple([f for f in [_run_flag(fn, ctx) for fn, needs in flag_fns if not (unknown and needs)]
                    if f is not None])
    overall = PASS if all(r.verdict != FAIL for r in results) else FAIL
    return ResponseEvaluation(results, raised, overall, ctx.is_t3)


def evaluate(resp: ResponseInput, *, ruleset: str, rules: Rules, profile: str,
             with_spans: bool = True) -> ResponseEvaluation:
    """Evaluate one response under ``ruleset`` (a rule set of ``rules``: 'legacy', 't3_aware',
    'refined', or one a user's rules file adds) and ``profile``."""
    return _evaluate(resp, _plan(ruleset, rules, profile), with_spans)


def evaluate_batch(resps: Iterable[ResponseInput], *, ruleset: str, rules: Rules,
                   profile: str) -> list[ResponseEvaluation]:
    """Evaluate many responses: verdicts and reasons identical to ``evaluate``, no spans."""
    plan = _plan(ruleset, rules, profile)
    return [_evaluate(resp, plan, False) for resp in resps]
