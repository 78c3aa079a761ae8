"""Small helpers shared by the subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any

import duckdb

from evaluator.store import fetch_one


class UsageError(Exception):
    """Something the user asked for that cannot be done as asked; the message says what to fix."""


def run_id_for(con: duckdb.DuckDBPyConnection, name: str) -> int:
    row = fetch_one(con, "SELECT run_id FROM runs WHERE name = ?", [name])
    if row is None:
        names = [r[0] for r in con.execute("SELECT name FROM runs ORDER BY run_id").fetchall()]
        known = ", ".join(names) if names else "none yet: ingest one first"
        raise UsageError(f"no run named {name!r} (runs: {known})")
    return int(row[0])


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
    from evaluator.rules import load_rules

    try:
        return load_rules(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
