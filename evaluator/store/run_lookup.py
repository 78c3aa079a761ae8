"""A run by the name a user typed (commands and pipeline steps share the one error message)."""

from __future__ import annotations

import duckdb

from evaluator.core.errors import UsageError
from evaluator.store.db import fetch_one


def run_id_for(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """The id of the run named ``name``; an unknown name is a UsageError listing the runs there are."""
    row = fetch_one(con, "SELECT run_id FROM runs WHERE name = $name", {"name": name})
    if row is None:
        names = [r[0] for r in con.execute("SELECT name FROM runs ORDER BY run_id").fetchall()]
        known = ", ".join(names) if names else "none yet: ingest one first"
        raise UsageError(f"no run named {name!r} (runs: {known})")
    return int(row[0])
