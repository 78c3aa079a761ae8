"""Two answers side by side with the changed words marked: escaped HTML with <del>/<ins> marks.

difflib on word tokens (white space kept with the word before it, so the text reads as written).
Every token goes through `highlight.escape_text` (HTML escaped, invisible and bidi characters shown);
the only markup is ours, and each side is a dir="auto", bidi-isolated box like every model text.
Very long answers are compared on their first MAX_WORDS words, and the page says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from dashboard.highlight import BIDI, BOX_STYLE, escape_text

MAX_WORDS = 5_000  # difflib is quadratic at worst: a 1 MB answer is compared on its start
TOKEN = re.compile(r"\S+\s*|\s+")
DEL_STYLE = "background:#ffebee;color:#b71c1c;text-decoration:line-through"
INS_STYLE = "background:#e8f5e9;color:#1b5e20;text-decoration:none"


@dataclass(frozen=True)
class WordDiff:
    a_html: str  # answer A, words only in A inside <del>
    b_html: str  # answer B, words only in B inside <ins>
    removed: int  # words only in A
    added: int  # words only in B
    cut: bool  # an answer was longer than MAX_WORDS words: only the start was compared


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _mark(tag: str, style: str, words: list[str]) -> str:
    text = "".join(words)
    stripped = text.rstrip()
    return f'<{tag} style="{style}">{escape_text(stripped)}</{tag}>{escape_text(text[len(stripped):])}'


def word_diff(a: str | None, b: str | None, *, max_words: int = MAX_WORDS) -> WordDiff:
    """Mark the words of `a` missing from `b` (<del>) and those of `b` missing from `a` (<ins>)."""
    ta, tb = tokens(a or ""), tokens(b or "")
    cut = len(ta) > max_words or len(tb) > max_words
    ta, tb = ta[:max_words], tb[:max_words]
    # compare words without their trailing space, so a changed line break is not a changed word
    matcher = SequenceMatcher(None, [t.strip() for t in ta], [t.strip() for t in tb], autojunk=False)
    out_a: list[str] = []
    out_b: list[str] = []
    removed = added = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out_a.append(escape_text("".join(ta[i1:i2])))
            out_b.append(escape_text("".join(tb[j1:j2])))
            continue
        if i2 > i1:
            out_a.append(_mark("del", DEL_STYLE, ta[i1:i2]))
            removed += sum(1 for t in ta[i1:i2] if t.strip())
        if j2 > j1:
            out_b.append(_mark("ins", INS_STYLE, tb[j1:j2]))
            added += sum(1 for t in tb[j1:j2] if t.strip())
    return WordDiff("".join(out_a), "".join(out_b), removed, added, cut)


def panel(title: str, body_html: str) -> str:
    """One side of the comparison as an HTML block (title: our own words, already escaped by the caller)."""
    return (f'<div style="{BOX_STYLE}"><div style="font-weight:600;margin-bottom:0.4rem">{title}</div>'
            f'<div {BIDI} style="unicode-bidi:isolate">{body_html}</div></div>')
