"""Saved rule sets (issue 16 §3): named, hashed versions of a complete rules text in the store.

The Rule lab saves an edited rule set under a name; saving again is a new version, never an
overwrite. A saved text is the whole merged rules (``rules_merge.to_toml``) and defines a rule
set of its own name, so ``recompute --ruleset NAME`` evaluates under it like under a built-in
one, and the evaluation it stores (ruleset = NAME) shows on every page that lists rule sets.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime

import duckdb

from evaluator.rules.load import Rules, load_rules, rules_from_text
from evaluator.store.db import atomic, connect, fetch_one, is_server, resolve_db_path

NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
RESERVED = ("recorded",)  # the ingested file's own verdicts


@dataclass(frozen=True)
class SavedRuleset:
    name: str
    version: int
    rules_hash: str
    rules_text: str
    created_at: datetime
    created_by: str | None

    @property
    def source(self) -> str:
        return f"saved rule set {self.name} v{self.version}"

    def rules(self) -> Rules:
        return rules_from_text(self.rules_text, self.source)


_COLUMNS = "name, version, rules_hash, rules_text, created_at, created_by"


def check_name(name: str) -> str:
    """The name as saved, or ValueError saying what is wrong with it."""
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError("name: use 1 to 64 letters, digits, _ or - (no spaces)")
    taken = set(load_rules().ruleset_names) | set(RESERVED)
    if name in taken:
        raise ValueError(f"name: {name!r} is a built-in rule set; pick another name")
    return name


def save(con: duckdb.DuckDBPyConnection, name: str, rules_text: str, *, created_by: str | None = None
         ) -> SavedRuleset:
    """Store ``rules_text`` as the next version of ``name`` (in one transaction). The text must be
    valid rules that define a rule set called ``name``; nothing is written otherwise."""
    check_name(name)
    rules = rules_from_text(rules_text, f"rule set {name}")
    if name not in rules.ruleset_names:
        raise ValueError(f"rules: the text does not define rule set {name!r} ([rulesets.{name}])")
    with atomic(con):
        row = fetch_one(con, "SELECT coalesce(max(version), 0) + 1 FROM saved_rulesets WHERE name = $name",
                        {"name": name})
        version = int(row[0]) if row else 1
        con.execute(
            f"""INSERT INTO saved_rulesets ({_COLUMNS})
                VALUES ($name, $version, $hash, $text, now()::TIMESTAMP, $by)""",
            {"name": name, "version": version, "hash": rules.hash, "text": rules_text, "by": created_by},
        )
    found = version_of(con, name, version)
    assert found is not None
    return found


def version_of(con: duckdb.DuckDBPyConnection, name: str, version: int | None = None) -> SavedRuleset | None:
    """One version of a saved rule set (default: the latest), None when there is none."""
    rows = con.execute(
        f"""SELECT {_COLUMNS} FROM saved_rulesets
            WHERE name = $name AND ($version IS NULL OR version = $version)
            ORDER BY version DESC LIMIT 1""",
        {"name": name, "version": version},
    ).fetchall()
    return SavedRuleset(*rows[0]) if rows else None


def versions(con: duckdb.DuckDBPyConnection, name: str) -> list[SavedRuleset]:
    """Every version of a saved rule set, newest first."""
    rows = con.execute(f"SELECT {_COLUMNS} FROM saved_rulesets WHERE name = $name ORDER BY version DESC",
                       {"name": name}).fetchall()
    return [SavedRuleset(*row) for row in rows]


def names(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the saved rule sets, by name."""
    return [row[0] for row in con.execute("SELECT DISTINCT name FROM saved_rulesets ORDER BY name").fetchall()]


def saved_rules(db: str | os.PathLike[str] | None, name: str) -> Rules | None:
    """The latest saved version of rule set ``name`` as rules (None when the store has none):
    the CLI's fallback when its rules files do not define the rule set it is asked for."""
    if not NAME_PATTERN.fullmatch(name) or (not is_server(db) and not resolve_db_path(db).exists()):
        return None
    with connect(db, read_only=True, upgrade=True) as con:
        found = version_of(con, name)
    return found.rules() if found is not None else None
