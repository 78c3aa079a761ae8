"""The fast text normalisations (metrics' normalize, the heuristic judge's words) equal their
straightforward definitions on any text."""

from __future__ import annotations

import re
import string
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.pipeline.judges.heuristic import _words, straighten
from evaluator.pipeline.metrics.trust import normalize

TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=200) | st.text(
    alphabet="ab 'i\u2019\u201c\u201d.,;:!?-\u2014()[]\n\tTHE the a An \u00e9\u0130\u00df", max_size=200)


def reference_normalize(text: str) -> str:
    def is_punct(ch: str) -> bool:
        return ch in string.punctuation or unicodedata.category(ch).startswith("P")

    text = "".join(ch for ch in text.lower() if not is_punct(ch))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def reference_words(text: str) -> list[tuple[str, int, int]]:
    out = []
    for m in re.finditer(r"\S+", text):
        raw = straighten(m.group())
        core = re.search(r"[\w'](?:.*[\w'])?", raw)
        if core:
            out.append((core.group().lower(), m.start() + core.start(), m.start() + core.end()))
    return out


@settings(max_examples=400)
@given(TEXT)
def test_normalize_equals_its_definition(text):
    assert normalize(text) == reference_normalize(text)


@settings(max_examples=400)
@given(TEXT)
def test_words_equal_their_definition(text):
    assert _words(text) == reference_words(text)


def test_examples():
    assert normalize("The \u201cSun\u201d, a star!") == "sun star"
    assert _words("\u2014 Rama\u2019s bow... (unstrung)") == [("rama's", 2, 8), ("bow", 9, 12), ("unstrung", 17, 25)]
