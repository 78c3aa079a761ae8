"""Text views the rules match on: straightened quotes and case folding, both length-preserving
(so offsets found in a view index the original text), and the normal form of a looked-up term."""

from __future__ import annotations

import importlib
import re

_QUOTE_MAP = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'", "\uff07": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"',
}

# The map as two strings of the same length, character for character (the SQL engine's translate).
CURLY_QUOTES, STRAIGHT_QUOTES = "".join(_QUOTE_MAP), "".join(_QUOTE_MAP.values())


def straighten(text: str) -> str:
    """Curly quotes and apostrophes -> straight ones; same length, same offsets."""
    if text.isascii():
        return text
    for curly, straight in _QUOTE_MAP.items():
        if curly in text:
            text = text.replace(curly, straight)
    return text


def char_class(c: str) -> tuple[bool, bool, bool]:
    """Whether ``c`` is a word, space and decimal character (as ``\\w``, ``\\s``, ``\\d`` see it)."""
    return (c.isalnum() or c == "_", c.isspace(), c.isdecimal())


def _fold_tables() -> tuple[dict[int, int], frozenset[int]]:
    """Characters ``re.IGNORECASE`` treats as equal beyond lower() (e.g. 'ſ' ~ 's', 'ı' ~ 'i'),
    mapped to one representative. Classes mixing word and non-word characters are not
    merged; patterns mentioning them get no folded twin."""
    try:
        extra: dict[int, tuple[int, ...]] = importlib.import_module("re._casefix")._EXTRA_CASES
    except (ImportError, AttributeError):
        extra = {0x69: (0x131,), 0x131: (0x69,), 0x73: (0x17F,), 0x17F: (0x73,)}
    table: dict[int, int] = {}
    unsafe: set[int] = set()
    for k, vs in extra.items():
        cls = {k, *vs}
        if len({char_class(chr(c)) for c in cls}) > 1:
            unsafe |= cls
            continue
        rep = min(cls)
        for c in cls:
            if c != rep:
                table[c] = rep
    return table, frozenset(unsafe)


FOLD_TABLE, FOLD_UNSAFE = _fold_tables()
_FOLD_RX = re.compile("[" + "".join(re.escape(chr(c)) for c in FOLD_TABLE) + "]")


def casefold_aligned(text: str) -> str | None:
    """Lower-case ``text`` keeping every character at its offset, folding the extra
    IGNORECASE equivalences; None if that is impossible (never expected)."""
    if text.isascii():
        return text.lower()
    if "\u0130" in text:  # 'İ'.lower() is two characters; IGNORECASE treats it as 'i'
        text = text.replace("\u0130", "i")
    low = text.lower()
    if _FOLD_RX.search(low) is not None:
        low = low.translate(FOLD_TABLE)
    return low if len(low) == len(text) else None


_SLASH_RX = re.compile(r" ?/ ?")


def norm_term(text: str) -> str:
    """Normal form used to look a price or proper noun up in other text: straight quotes,
    lower case, white space folded, no spaces around '/'."""
    out = straighten(text).lower()
    if not out.isascii() or "  " in out or "\n" in out or "\t" in out or "\r" in out or "\f" in out or "\v" in out:
        out = " ".join(out.split())
    elif out[:1] == " " or out[-1:] == " ":
        out = out.strip(" ")
    return _SLASH_RX.sub("/", out) if "/" in out else out
