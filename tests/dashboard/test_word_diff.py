"""dashboard.word_diff: two answers with the changed words marked, as inert HTML."""

from __future__ import annotations

import html
import re

from dashboard.highlight import visible_token
from dashboard.word_diff import panel, word_diff

TAG = re.compile(r"<[^>]*>")


def test_changed_words_are_marked_on_their_side_only():
    diff = word_diff("Pro costs $29 a month.", "Pro costs $39 a month.")
    a, b = html.unescape(diff.a_html), html.unescape(diff.b_html)
    assert a.startswith("Pro costs <del style=") and a.endswith(">$29</del> a month.")
    assert ">$39</ins> a month." in b and "<del" not in b
    assert html.unescape(TAG.sub("", diff.a_html)) == "Pro costs $29 a month."
    assert (diff.removed, diff.added, diff.cut) == (1, 1, False)


def test_markup_in_an_answer_is_escaped_inside_and_outside_the_marks():
    diff = word_diff('<a href="https://evil.example">x</a> same', "<img src=x onerror=alert(1)> same")
    assert "<a " not in diff.a_html and "<img" not in diff.b_html
    assert html.unescape(TAG.sub("", diff.a_html)) == '<a href="https://evil.example">x</a> same'
    assert html.unescape(TAG.sub("", diff.b_html)) == "<img src=x onerror=alert(1)> same"


def test_long_answers_are_compared_on_their_start():
    diff = word_diff("word " * 30, "word " * 29 + "other", max_words=10)
    assert diff.cut and (diff.removed, diff.added) == (0, 0)


def test_a_right_to_left_override_in_an_answer_is_shown_not_obeyed():
    diff = word_diff("price \u202eevil ok", "price ok")
    box = panel("A", diff.a_html)
    assert "\u202e" not in box and visible_token(0x202E) in box
    assert 'dir="auto"' in box and "unicode-bidi:isolate" in box
