"""Small helpers shared by the subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any

from evaluator.core.errors import UsageError
from evaluator.store.run_lookup import run_id_for

__all__ = ["UsageError", "load_rules_arg", "print_json", "print_table", "run_id_for"]


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, default=str, ensure_ascii=False)
    sys.stdout.write("\n")


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
    return str(value)


def load_rules_arg(path: str | None) -> Any:
    """The rules of --rules (default: built-in); a bad file is the user's to fix, so exit 2."""
    from evaluator.rules.load import load_rules

    try:
        return load_rules(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
