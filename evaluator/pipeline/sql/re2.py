"""Python regexes that mean the same in RE2 (DuckDB's regex engine) on the text SQL decides.

The SQL engine decides only rows whose text is "clean ASCII" (``CLEAN_SQL``): printable
ASCII plus tab, newline, carriage return and form feed. On such text Python's Unicode
``\\w``, ``\\d``, ``\\b`` and ``\\s`` equal RE2's ASCII ones (the characters where they
differ - vertical tab, \\x1c-\\x1f, everything non-ASCII - are outside the gate), and
IGNORECASE folds only ASCII letters in both engines when the pattern is ASCII. The answer is
gated once its curly quotes are straightened (both engines match it so: ``straightened``) and
without ``ANSWER_PUNCTUATION``, characters that are none of those classes in either engine
(``answer_gate``).

``to_re2`` accepts a pattern only when every construct in it has that same meaning, and
returns None otherwise (the caller then lets Python decide): no lookaround, back-references,
possessive or atomic groups, inline flags other than the ``(?i)`` it adds itself, no ``$``
(Python's matches before a final newline too), no ``{,n}``, no nested ``[``, no non-ASCII.
"""

from __future__ import annotations

import re

import duckdb

from evaluator.core.text_norm import CURLY_QUOTES, STRAIGHT_QUOTES

# A row's text may be decided in SQL only when it is made of [\t\n\f\r -~]: as many bytes as
# characters (ASCII) and none of the other control characters (Python's str.split() and RE2
# disagree on some). A scan per control character (memchr) costs a third of one regexp_matches
# with a negated class. ``CLEAN_SQL.format(x=expression)``.
_CONTROL = (*range(0, 9), 11, *range(14, 32), 127)
_TEXT = "coalesce({x}, '')"
CLEAN_SQL = (f"(strlen({_TEXT}) = length({_TEXT}) AND NOT ("
             + " OR ".join(f"contains({_TEXT}, chr({c}))" for c in _CONTROL) + "))")


# Non-ASCII punctuation an answer may hold and still be decided in SQL (LLM answers are full of
# dashes and ellipses): no character here is a word, digit or space character for Python's
# Unicode classes or RE2's ASCII ones, none has a case, and both engines' normalize_answer drop
# them (tests/evaluator/pipeline/sql/test_re2_clean.py checks each). The gate tests the answer without them.
ANSWER_PUNCTUATION = "\u2010\u2011\u2012\u2013\u2014\u2015\u2026\u2022\u00b7\u2212\u2192\u00d7\u00b0"
# The parameters of ``straightened`` and ``answer_gate``.
ANSWER_PARAMS = {"curly": CURLY_QUOTES, "straight": STRAIGHT_QUOTES, "punct": ANSWER_PUNCTUATION}


def _translated(x: str, source: str) -> str:
    """SQL: ``x`` with each character of ``source`` turned into its counterpart in ``$straight``
    (deleted past its end); a plain ASCII text is left as it is, untranslated."""
    return f"CASE WHEN strlen({x}) = length({x}) THEN {x} ELSE translate({x}, {source}, $straight) END"


def straightened(x: str) -> str:
    """SQL: the answer ``x`` (a column, not NULL) with its curly quotes straightened, as both
    engines match the rules on it (text_norm.straighten)."""
    return _translated(x, "$curly")


def answer_gate(x: str) -> str:
    """SQL: the answer ``x`` (a column, not NULL) as the clean gate tests it: straightened and
    without ANSWER_PUNCTUATION (deleted: ``$punct`` has no counterpart in ``$straight``)."""
    return _translated(x, "$curly || $punct")


def clean_of(expr: str) -> str:
    """CLEAN_SQL of a computed expression (not a column), computed once: DuckDB would otherwise
    compute it again for each of CLEAN_SQL's 32 uses (2 s of a 200k run's 8 s for the texts
    joined), so it goes through a lambda over a one-element list."""
    return f"list_transform([{expr}], lambda clean_text: {CLEAN_SQL.format(x='clean_text')})[1]"


_SAFE_ESCAPE_LETTERS = set("wWdDsSbBAntrf")


def re2_compiles(con: duckdb.DuckDBPyConnection, regex: str) -> bool:
    """Whether DuckDB's RE2 takes the regex: a pattern of the same meaning may still be refused
    (RE2 counts repetitions to 1,000 at most, nested ones multiplied; a huge alternation may
    exceed its program size), and then Python decides what it would have decided."""
    try:
        con.execute("SELECT regexp_matches('', $rx)", {"rx": regex}).fetchall()
    except duckdb.Error:
        return False
    return True


def to_re2(pattern: str, *, ignore_case: bool) -> str | None:
    """The RE2 form of a Python pattern (same matches on clean ASCII text), or None."""
    if not pattern.isascii() or not _same_meaning(pattern):
        return None
    try:
        compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error:
        return None
    if compiled.flags & (re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII | re.LOCALE):
        return None
    return f"(?i:{pattern})" if ignore_case else pattern


def _same_meaning(p: str) -> bool:
    i, n, in_class, class_start = 0, len(p), False, -1
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                return False
            e = p[i + 1]
            # in a class, Python's \b is a backspace
            if e.isalnum() and (e not in _SAFE_ESCAPE_LETTERS or (in_class and e in "bBA")):
                return False
            i += 2
            continue
        if in_class:
            if c == "[":
                return False
            if c == "]":
                if i == class_start:  # "[]...]": a literal ] in Python, not portable
                    return False
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            class_start = i + 1 + (1 if p[i + 1 : i + 2] == "^" else 0)
        elif c == "$":
            return False
        elif c == "(" and p[i + 1 : i + 2] == "?":
            if not (p.startswith("(?:", i) or p.startswith("(?P<", i)):
                return False
        elif c == "{" and p[i + 1 : i + 2] == "," or c in "*+?}" and p[i + 1 : i + 2] == "+":
            return False
        elif c == "{":
            m = re.match(r"\{(\d+)(?:,(\d*))?\}", p[i:])
            if m is not None and max(int(m.group(1)), int(m.group(2) or 0)) > 1000:
                return False
        i += 1
    return not in_class


def min_width(pattern: str, *, ignore_case: bool) -> int:
    """The fewest characters a match takes (0: it can match empty)."""
    if pattern == "":
        return 0
    try:
        import importlib

        parser = importlib.import_module("re._parser")
        lo: int = parser.parse(pattern, re.IGNORECASE if ignore_case else 0).getwidth()[0]
        return lo
    except Exception:  # noqa: BLE001 - unknown: treat as possibly empty
        return 0
