"""Find the stored evaluation a command or page asks for, computing it when missing."""

from __future__ import annotations

import os
import sys

import duckdb

from evaluator.core.errors import UsageError
from evaluator.rules.load import Rules, load_rules
from evaluator.store.db import connect, db_path_of, fetch_one, fetch_value
from evaluator.store.run_lookup import run_id_for

# The built-in rule sets, read from the default rules (a user's --rules file may add more; code
# that has the loaded rules asks them: ``rules.ruleset_names``). Kept for argparse choices.
RULESETS: tuple[str, ...] = load_rules().ruleset_names


def computable(rules: Rules | None) -> tuple[str, ...]:
    """The rule sets an evaluation can be computed under with these rules (default: built-in)."""
    return (rules or load_rules()).ruleset_names


def recorded_evaluation(con: duckdb.DuckDBPyConnection, run_name: str) -> int:
    run_id = run_id_for(con, run_name)
    row = fetch_one(
        con, "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run AND ruleset = 'recorded'",
        {"run": run_id},
    )
    if row is None or row[0] is None:
        raise UsageError(f"run {run_name!r} has no recorded verdicts in its file; use --ruleset "
                         f"{'|'.join(RULESETS)}")
    return int(row[0])


def ruleset_evaluation(
    con: duckdb.DuckDBPyConnection,
    run_name: str,
    ruleset: str,
    *,
    rules: Rules | None = None,
    compute: bool = True,
    progress: bool = False,
) -> int:
    """Latest evaluation of the run under this rule set and these rules; computed if there is none."""
    rules = rules or load_rules()
    if ruleset not in rules.ruleset_names:
        raise UsageError(f"unknown rule set {ruleset!r}; use one of {', '.join(rules.ruleset_names)}")
    run_id = run_id_for(con, run_name)
    row = fetch_one(
        con,
        "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run AND ruleset = $ruleset "
        "AND rules_hash = $hash",
        {"run": run_id, "ruleset": ruleset, "hash": rules.hash},
    )
    if row is not None and row[0] is not None:
        return int(row[0])
    if not compute:
        raise UsageError(f"run {run_name!r} has no {ruleset} evaluation yet; run: evaluator recompute --run "
                         f"{run_name} --ruleset {ruleset}")
    from evaluator.pipeline.recompute import recompute

    print(f"evaluating {run_name} under {ruleset} (not stored yet)…", file=sys.stderr)
    # The caller's cursor keeps the store open meanwhile (it reads the evaluation next).
    return recompute(db_path_of(con), run_name, ruleset, rules=rules, progress=progress).evaluation_id


def ensure_evaluation(db: str | os.PathLike[str] | None, run_name: str, ruleset: str | None, *,
                      rules: Rules | None = None, any_rules: bool = False, progress: bool = False) -> None:
    """Compute the run's evaluation under a computable rule set when it is not stored yet (with
    these rules, or with any rules when any_rules), before the caller opens the store to read it:
    so a report, export, gate or compare that needs a recompute holds the store only for the
    recompute's own short windows. Anything else (unknown run, other rule sets) is left for the
    caller's lookup to report."""
    rules = rules or load_rules()
    if ruleset not in rules.ruleset_names:
        return
    with connect(db, read_only=True, upgrade=True) as con:
        stored = fetch_value(
            con,
            """SELECT count(*) FROM evaluations e JOIN runs r ON r.run_id = e.run_id
               WHERE r.name = $name AND e.ruleset = $ruleset AND ($any_rules OR e.rules_hash = $hash)""",
            {"name": run_name, "ruleset": ruleset, "any_rules": any_rules, "hash": rules.hash},
        )
        if stored or fetch_value(con, "SELECT count(*) FROM runs WHERE name = $name", {"name": run_name}) == 0:
            return
    from evaluator.pipeline.recompute import recompute

    print(f"evaluating {run_name} under {ruleset} (not stored yet)…", file=sys.stderr)
    recompute(db, run_name, ruleset, rules=rules, progress=progress)


def evaluation_for(
    con: duckdb.DuckDBPyConnection, run_name: str, *, ruleset: str | None, recorded: bool,
    rules: Rules | None = None, progress: bool = False,
) -> int:
    if recorded:
        return recorded_evaluation(con, run_name)
    if not ruleset:
        raise UsageError(f"say which verdicts: --ruleset {'|'.join(computable(rules))} or --recorded")
    return ruleset_evaluation(con, run_name, ruleset, rules=rules, progress=progress)
