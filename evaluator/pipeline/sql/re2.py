"""Which text the SQL engine decides, and the rules' patterns as DuckDB matches them.

The SQL engine decides only rows whose text is "clean ASCII" (``CLEAN_SQL``): printable
ASCII plus tab, newline, carriage return and form feed. On such text Python's Unicode
``\\w``, ``\\d``, ``\\b`` and ``\\s`` equal RE2's ASCII ones (the characters where they
differ - vertical tab, \\x1c-\\x1f, everything non-ASCII - are outside the gate), and
IGNORECASE folds only ASCII letters in both engines when the pattern is ASCII. The answer is
gated once its curly quotes are straightened (both engines match it so: ``straightened``) and
without ``ANSWER_PUNCTUATION``, characters that are none of those classes in either engine
(``answer_gate``).

The rules' patterns are RE2 patterns, matched by google-re2 in Python and by DuckDB's RE2 in
SQL, so a pattern means the same in both; the gate is about the Python code around them (its
``str.split``, ``lower`` and ``isalnum`` are Unicode-aware).
"""

from __future__ import annotations

import duckdb

from evaluator.rules.text_norm import CURLY_QUOTES, STRAIGHT_QUOTES

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


def re2_compiles(con: duckdb.DuckDBPyConnection, regex: str) -> bool:
    """Whether DuckDB's RE2 takes the regex: a pattern of the same meaning may still be refused
    (RE2 counts repetitions to 1,000 at most, nested ones multiplied; a huge alternation may
    exceed its program size), and then Python decides what it would have decided."""
    try:
        con.execute("SELECT regexp_matches('', $rx)", {"rx": regex}).fetchall()
    except duckdb.Error:
        return False
    return True


def to_re2(pattern: str, *, ignore_case: bool) -> str:
    """The rule's pattern as DuckDB matches it: rules patterns are RE2 patterns already (the
    Python side matches them with google-re2), so only the case flag is added."""
    return f"(?i:{pattern})" if ignore_case else pattern
