"""dashboard.word_diff: two answers with the changed words marked, as inert HTML."""

from __future__ import annotations

from dashboard.word_diff import word_diff


def test_changed_words_are_marked_on_their_side_only():
    diff = word_diff("Pro costs $29 a month.", "Pro costs $39 a month.")
    assert diff.a_html.startswith("Pro costs <del style=") and diff.a_html.endswith(">$29</del> a month.")
    assert ">$39</ins> a month." in diff.b_html and "<del" not in diff.b_html
    assert (diff.removed, diff.added, diff.cut) == (1, 1, False)


def test_markup_in_an_answer_is_escaped_inside_and_outside_the_marks():
    diff = word_diff('<a href="https://evil.example">x</a> same', "<img src=x onerror=alert(1)> same")
    assert "<a " not in diff.a_html and "&lt;a href=&quot;https://evil.example&quot;&gt;x&lt;/a&gt;" in diff.a_html
    assert "<img" not in diff.b_html and "&lt;img src=x onerror=alert(1)&gt;" in diff.b_html


def test_long_answers_are_compared_on_their_start():
    diff = word_diff("word " * 30, "word " * 29 + "other", max_words=10)
    assert diff.cut and (diff.removed, diff.added) == (0, 0)
