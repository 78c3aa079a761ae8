"""dashboard.common.md: a name from the store inside Markdown is shown literally."""

from __future__ import annotations

from dashboard.common import md


def test_math_and_emphasis_in_a_name_are_escaped():
    assert md("$x$ _y_ *z*") == r"\$x\$ \_y\_ \*z\*"


def test_a_link_in_a_name_is_neither_markup_nor_an_autolink():
    shown = md("[go](https://evil.example)")
    assert shown == "\\[go\\]\\(https\u2060://evil.example\\)"
