"""Runs in the store, with their sizes."""

from __future__ import annotations

from typing import Any

import duckdb

RUN_COLUMNS = ["name", "profile", "source_file", "ingested_at", "responses", "providers", "questions"]


def list_runs(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    rows = con.execute(
        """SELECT r.name, r.profile, r.source_file, r.ingested_at, r.n_responses, r.n_providers, r.n_questions
           FROM runs r ORDER BY r.run_id"""
    ).fetchall()
    return [dict(zip(RUN_COLUMNS, row, strict=True)) for row in rows]


def run_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [row[0] for row in con.execute("SELECT name FROM runs ORDER BY run_id").fetchall()]


def evaluations(con: duckdb.DuckDBPyConnection, run_name: str) -> list[dict[str, Any]]:
    """Stored evaluations of a run, newest first within each rule set."""
    rows = con.execute(
        """SELECT e.evaluation_id, e.ruleset, e.rules_hash, e.created_at, e.duration_s, e.n_responses
           FROM evaluations e JOIN runs r USING (run_id)
           WHERE r.name = $name ORDER BY e.evaluation_id DESC""",
        {"name": run_name},
    ).fetchall()
    keys = ["evaluation_id", "ruleset", "rules_hash", "created_at", "duration_s", "n_responses"]
    return [dict(zip(keys, row, strict=True)) for row in rows]

