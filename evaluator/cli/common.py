"""Small helpers shared by the subcommands."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any, TextIO

from evaluator.core.errors import UsageError
from evaluator.store.run_lookup import run_id_for

__all__ = ["InertStdout", "UsageError", "inert", "load_rules_arg", "print_json", "print_table", "run_id_for"]

# What a terminal acts on rather than shows: C0/C1 controls (ESC starts CSI/OSC sequences that move the
# cursor, clear the screen or retitle the window; BEL rings), DEL, and invisible format characters
# (U+202E turns the rest of a line around). Names from run files are printed with these escaped.
_ACTING = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def inert(text: object, keep: str = "") -> str:
    """`text` for a terminal: every control or invisible format character shown as its escape
    (ESC -> \\x1b, BEL -> \\x07, U+202E -> \\u202e, a newline inside a name -> \\x0a), the
    characters in `keep` left as they are."""
    value = str(text)
    if value.isprintable():  # the usual name: nothing to escape
        return value
    return "".join(_escape(ch) if ch not in keep and unicodedata.category(ch) in _ACTING else ch for ch in value)


_JSON_ACTING = re.compile("[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                          "\ufeff\ufff9-\ufffb]")


def print_json(value: Any) -> None:
    """JSON with every string as it is, and no character a terminal would act on left raw: JSON
    escapes C0 controls itself; C1 controls, DEL and invisible format characters become \\uXXXX
    escapes (the same JSON value)."""
    text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write(_JSON_ACTING.sub(lambda m: f"\\u{ord(m.group()):04x}", text))
    sys.stdout.write("\n")


class InertStdout:
    """sys.stdout (or stderr) for a command: what it prints reaches the terminal inert (the line
    breaks in `keep` pass; every other control or format character is escaped), whichever print a
    name came through."""

    def __init__(self, stream: TextIO, keep: str = "\n\t") -> None:
        self._stream, self._keep = stream, keep

    def write(self, text: str) -> int:
        self._stream.write(inert(text, keep=self._keep))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def print_table(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A plain aligned text table for humans; --json is for machines."""
    cells = [[_fmt(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return inert(value)


def load_rules_arg(path: str | None) -> Any:
    """The rules of --rules (default: built-in); a bad file is the user's to fix, so exit 2."""
    from evaluator.rules.load import load_rules

    try:
        return load_rules(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
