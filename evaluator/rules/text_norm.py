"""The text view the rules match on: straightened quotes, length-preserving (so offsets found in
it index the original text), and the normal form of a looked-up term."""

from __future__ import annotations

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
