"""What a check's or flag's SQL form is written with (pure: strings only, no duckdb).

Each check and flag registers its SQL form beside its Python form (``@check(..., sql=...)`` in
evaluator/core/checks.py, ``@flag(..., sql=...)`` in evaluator/core/flags.py): a function of a ``SqlCase``
returning one SQL expression over the per-response features that evaluator/pipeline/sql/compile.py
computes. A check's expression yields ``{'v': verdict, 'r': reason}`` (``pair``); a flag's yields
its severity, or NULL when it is not raised.

The features (columns) an expression may read, all on clean rows (clean ASCII, but for the answer's
curly quotes, read straightened, and ANSWER_PUNCTUATION: see compile.py and re2.py):
- routing: ``er``/``et`` expected routing/template, ``act_c``/``act_t`` classification/template
  (trimmed, NULL when blank), ``pe``/``pa`` the expected/actual pair compared, ``pe_n``/``pa_n``
  the same through the rules' routes;
- retrieval: ``n_items``, ``n_scores`` (items with a score), ``n_above`` (scores at or above
  $min_score), ``best``, ``missing`` (expected ids named, none retrieved) and ``missing_reason``;
  ``retrieval_recorded`` (false: the run records no retrieval; compile.py then puts N/A in the place of
  each check registered with ``needs_retrieval`` and NULL in that of each such flag, so a form never
  needs to test it);
- the answer: ``is_t3``, ``tmpl`` (the template, upper case), ``empty``, ``answerable``,
  ``refused`` (the profile's refusal rule), ``h_refusal``/``h_phrases`` (refusal patterns, refusal
  phrases), ``h_redirect`` (T3 rows), ``h_sub`` (refused T3 rows), ``h_markers`` (T2 rows),
  ``gold`` (normalised aliases), ``gold_found``, ``cites`` (cited ids), ``bad_cite`` (the first
  cited id not retrieved), ``unverified`` (the first unverified price or proper noun: {t, p}),
  ``unsupported`` (some sentence the retrieved items do not support: evaluator/core/support.py;
  worked out only when a rule set raises unsupported_claim);
- parameters: ``$thr`` (the threshold as Python's ``:g`` prints it), ``$nar`` (the profile's
  not-applicable reason), ``$sev_<flag>`` (each flag's severity).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

WS = "[\\t\\n\\f\\r ]"  # str.split()'s white space on clean ASCII text
NA, FAIL, PASS = "N/A", "FAIL", "PASS"


@dataclass(frozen=True)
class SqlCase:
    """What a check's SQL form depends on besides the row: the rule set and the profile."""

    t3_not_applicable: frozenset[str]  # checks N/A for a T3 refusal under the rule set
    refusal_expected: str  # SQL: the row's question must be refused (unanswerable), by the profile
    has_citation: bool  # the profile defines a citation pattern
    answerability: bool  # the profile's answers_question follows answerability
    citation_noun: str = ""  # what the profile's citations cite ("shloka"), "" = said generically
    extra_flags: frozenset[str] = frozenset()  # the opt-in flags the rule set raises (the others' column is NULL)

    def words(self, key: str) -> str:
        """SQL literal of a reason's words for the profile's citations (checks.cited_words)."""
        return "'" + cited_words(self.citation_noun)[key].replace("'", "''") + "'"

    def not_required(self, check: str) -> str:
        """SQL: ``check`` is not required for this row (a T3 refusal, or an expected refusal)."""
        return f"(is_t3 OR {self.refusal_expected})" if check in self.t3_not_applicable else "false"


def pair(verdict: str, reason: str) -> str:
    """A check's outcome: the verdict and the SQL expression of its reason."""
    return f"{{'v': '{verdict}', 'r': {reason}}}"


def repr_of(x: str) -> str:
    """Python's repr() of a clean ASCII string."""
    esc = (f"replace(replace(replace(replace(replace({x}, '\\', '\\\\'), chr(9), '\\t'), chr(10), '\\n'), "
           f"chr(13), '\\r'), chr(12), '\\x0c')")
    return (f"(CASE WHEN contains({x}, '''') AND NOT contains({x}, '\"') THEN '\"' || {esc} || '\"' "
            f"ELSE '''' || replace({esc}, '''', '\\''') || '''' END)")


def snippet_of(x: str) -> str:
    """checks.snippet(): one line, quoted, at most 60 characters."""
    one = f"trim(regexp_replace(left({x}, 240), '{WS}+', ' ', 'g'))"
    return f"('''' || CASE WHEN length({one}) > 60 THEN left({one}, 59) || '\u2026' ELSE {one} END || '''')"


@functools.cache
def cited_words(noun: str) -> dict[str, str]:
    """The reasons that speak of what citations cite, worded for a profile: its `citation_noun`
    ("shloka": "no inline shloka citation", for the Ramayana bot only), else generically
    ("no inline citation", "the retrieved items"). The SQL forms read the same words."""
    plural = f"{noun}s"
    if not noun:
        return {"no_citation": "no inline citation", "t1_pass": "T1: cites its sources",
                "t1_fail": "T1 must cite its sources: no inline citation",
                "t2_pass": "T2: cites its sources and interprets",
                "not_retrieved": ", which is not among the retrieved items", "expected": "expected items",
                "all_retrieved": "every citation was retrieved; no unverified price or proper noun",
                "nothing_unverified": "no unverified price or proper noun"}
    return {"no_citation": f"no inline {noun} citation", "t1_pass": f"T1: cites {plural}",
            "t1_fail": f"T1 must cite {plural}: no inline citation", "t2_pass": f"T2: cites {plural} and interprets",
            "not_retrieved": f", which is not among the retrieved {plural}", "expected": f"expected {plural}",
            "all_retrieved": f"every cited {noun} was retrieved; no unverified price or proper noun",
            "nothing_unverified": "no unverified price or proper noun"}
