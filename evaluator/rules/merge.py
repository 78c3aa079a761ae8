"""A user's rules file on top of the defaults (issue 13 §2), pure.

A user's file adds profiles and rule sets (and may change any other key): its tables are
merged key by key into the default rules, its other values replace the defaults'. The
merged rules are written back out as one complete TOML text, so an evaluation that
stores its rules text can be re-read later without the user's file (``rules_from_text``).
"""

from __future__ import annotations

import math
from typing import Any


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` on top of ``base``: tables merge recursively, anything else is replaced."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def to_toml(data: dict[str, Any], header: str = "") -> str:
    """TOML text that ``tomllib.loads`` reads back as ``data`` (the shapes rules files use:
    tables, strings, numbers, booleans, arrays of those and of inline tables)."""
    lines = [f"# {line}" for line in header.splitlines()]
    _table(data, [], lines)
    return "\n".join(lines) + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, dict)]
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for key, value in scalars:
        lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in tables:
        _table(value, [*path, key], lines)


def _key(key: str) -> str:
    return _string(str(key))


def _string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
