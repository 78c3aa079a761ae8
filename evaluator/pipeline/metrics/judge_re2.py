"""The heuristic judge and ``trust.normalize`` as RE2 / SQL text, for clean ASCII text only.

Clean ASCII (``evaluator.pipeline.sql.re2.CLEAN_SQL``): printable ASCII plus tab, newline, form feed and
carriage return. On such text Python's ``lower``, ``\\b``, ``\\s``, ``\\w`` and ``split`` equal
RE2's and DuckDB's, so the expressions below decide exactly what the Python code decides
(``fuzzy_prefilter`` and ``hedged_prefilter`` are the exceptions on purpose: supersets, Python
decides their rows).

Why one regex each (issue 16): DuckDB runs every ``regexp_matches`` as its own pass over the
answer; 23 patterns OR-ed together took 11x the time of the same patterns as one alternation,
and ``regexp_replace`` costs per match, so the normalisation replaces only what changes.
No duckdb import here: these are strings.
"""

from __future__ import annotations

import string

from evaluator.pipeline.judges.heuristic import HeuristicJudge

WS = "[\\t\\n\\f\\r ]"  # Python's \s on clean text
_NOT_WS = "[^\\t\\n\\f\\r ]"
# Clean characters that are neither white space, \w nor the apostrophe: what the judge strips
# from both ends of a word (its word core runs from the first [\w'] to the last).
_STRIP = "[" + "".join("\\" + c for c in string.punctuation if c not in "_'") + "]"
_PUNCT = "[" + "".join("\\" + c for c in string.punctuation) + "]+"  # RE2: \ + punctuation is literal
# One run of white space and articles that is not already a single space: replaced by one space,
# this equals trust.normalize's "articles -> ' '" then "white space folded" (a lone ' ' stays).
_ARTICLE = "\\b(?:a|an|the)\\b"
_FOLD = f"(?:{WS}|{_ARTICLE}){{2,}}|[\\t\\n\\f\\r]|{_ARTICLE}"

NORM_PARAMS = {"norm_punct_rx": _PUNCT, "norm_fold_rx": _FOLD}


def norm_sql(expr: str) -> str:
    """``trust.normalize(expr)`` on clean text (binds ``NORM_PARAMS``)."""
    no_punct = f"regexp_replace(lower({expr}), $norm_punct_rx, '', 'g')"
    return f"trim(regexp_replace({no_punct}, $norm_fold_rx, ' ', 'g'))"


def literal_re2(text: str) -> str:
    return "".join("\\" + c if c in string.punctuation else c for c in text)


def refusal_regex(judge: HeuristicJudge) -> tuple[str | None, bool]:
    """One RE2 regex that matches a clean answer exactly when the judge's phrases, patterns,
    abstention pack or empty-answer rule refuse it (None: nothing can), and whether that is
    the judge's whole non-fuzzy decision (False: some pattern only Python can run)."""
    parts: list[str] = []
    exact = True
    phrases = judge.phrase_texts
    if phrases and all(p.isascii() for p in phrases):  # a non-ASCII phrase may fold onto ASCII (K, ſ)
        parts.append("(?i:" + "|".join(literal_re2(p) for p in phrases) + ")")
    elif phrases:
        exact = False
    parts += [rx.pattern for rx in judge.regexes]  # RE2 patterns, their case flag inside
    if judge.empty_is_refusal:
        parts.append(f"^{WS}*$")  # RE2's $ is the end of the text (no multi-line mode)
    # Each part in its own group: a bare alternation or a leading inline flag stays inside it.
    return ("|".join(f"(?:{p})" for p in parts) if parts else None), exact


def hedged_prefilter(judge: HeuristicJudge) -> tuple[str | None, bool]:
    """One RE2 regex matching a clean answer where an abstention pattern the judge may find hedged
    matches (those answers are Python's to decide), and whether it is exact (False: some pattern
    only Python runs, so every answer is Python's)."""
    parts = []
    parts = [rx.pattern for rx in judge.hedged_regexes]  # RE2 patterns, their case flag inside
    return ("|".join(f"(?:{p})" for p in parts) if parts else None), True


def fuzzy_prefilter(judge: HeuristicJudge) -> str | None:
    """A regex every clean answer the fuzzy refusal flag can match also matches (None: none can).

    The judge compares only windows of at most n + 2 words holding at least max(1, n // 2) of
    the flag's n words. Here: that many flag words (whole words as the judge cuts them: a
    white-space separated token minus the punctuation around its core), each within
    n + 2 - need words of the previous one (a relaxation of the window, so a superset).
    Tokens of punctuation only are no words for the judge, so they are skipped freely."""
    alternatives = []
    for words in judge.flag_words:
        n, need = len(words), max(1, len(words) // 2)
        vocab = sorted({w for w in words if w.isascii()})  # a non-ASCII word never equals a clean one
        if not vocab:
            continue
        hit = f"{_STRIP}*(?:" + "|".join(literal_re2(w) for w in vocab) + f"){_STRIP}*"
        sep = f"{WS}+(?:{_STRIP}+{WS}+)*"
        other_word = f"{_STRIP}*[A-Za-z0-9_']{_NOT_WS}*"
        between = f"(?:{sep}{other_word}){{0,{n + 2 - need}}}{sep}"
        alternatives.append(f"(?:^|{WS})" + between.join([hit] * need) + f"(?:{WS}|$)")
    return "(?i:" + "|".join(alternatives) + ")" if alternatives else None
