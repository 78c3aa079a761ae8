"""evaluator.pipeline.sql.re2: the clean-ASCII gate, on a column and on a computed text."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.pipeline.sql.re2 import CLEAN_SQL, clean_of

CLEAN_CHARS = set("\t\n\f\r") | {chr(c) for c in range(32, 127)}
OTHER_CHARS = ["\x0b", "\x1c", "\x7f", "\x00", "é", "\u2019", "\U0001f600"]
TEXT = st.text(alphabet=st.sampled_from(sorted(CLEAN_CHARS) + OTHER_CHARS), max_size=12)


def _python_clean(*texts: str | None) -> bool:
    return all(set(t or "") <= CLEAN_CHARS for t in texts)


@settings(max_examples=200, deadline=None)
@given(a=st.one_of(st.none(), TEXT), b=st.one_of(st.none(), TEXT))
def test_a_computed_text_is_clean_exactly_when_each_of_its_parts_is(a, b):
    joined = clean_of("concat_ws(' ', $a, $b)")
    row = duckdb.connect().execute(f"SELECT {CLEAN_SQL.format(x='$a')}, {joined}", {"a": a, "b": b}).fetchall()[0]
    assert row == (_python_clean(a), _python_clean(a, b))


def test_the_punctuation_an_answer_may_hold_means_the_same_in_both_engines():
    """Each character of ANSWER_PUNCTUATION is, in Python's Unicode regexes and str methods, what
    RE2's ASCII classes take it for: no word, digit or space character; caseless; dropped by
    normalize_answer as by the SQL engine's strip; one character long for DuckDB as for Python."""
    import re

    from evaluator.core.checks import normalize_answer
    from evaluator.pipeline.sql.re2 import ANSWER_PUNCTUATION

    con = duckdb.connect()
    for c in ANSWER_PUNCTUATION:
        assert not c.isascii()
        assert not (c.isalnum() or c.isdecimal() or c.isspace() or c == "_")
        assert re.fullmatch(r"[^\w\s\d]", c) and re.fullmatch(r"[^\w\s\d]", c, re.IGNORECASE)
        assert c.lower() == c.upper() == c.casefold() == c
        assert normalize_answer(f"a{c}b c") == "ab c"
        got = con.execute(r"""SELECT lower($c) = $c, upper($c) = $c, length($c),
                                     regexp_matches($c, '^[^0-9A-Za-z_\s]$'), regexp_matches($c, '^\W$'),
                                     regexp_replace(lower($c), '[^a-z0-9\t\n\f\r ]+', '', 'g')""",
                          {"c": c}).fetchall()[0]
        assert got == (True, True, 1, True, True, ""), hex(ord(c))
