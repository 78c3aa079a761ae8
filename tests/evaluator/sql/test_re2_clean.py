"""evaluator.sql.re2: the clean-ASCII gate, on a column and on a computed text."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.sql.re2 import CLEAN_SQL, clean_of

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
