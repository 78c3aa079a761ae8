"""The Overview page: runs, pass rates per run x provider x template, check verdicts, flags.

Every figure is an aggregate computed in DuckDB (queries/report.py); Python only adds the
Wilson intervals to the few aggregated rows.
"""

from __future__ import annotations

from typing import Any

import duckdb

from evaluator.queries import report
from evaluator.queries.runs import list_runs, run_names
from evaluator.stats import wilson_interval

__all__ = [
    "CHECK_ORDER", "RULESET_ORDER", "check_counts", "evaluation_info", "flag_counts",
    "latest_evaluation", "pass_rates_by_run", "rulesets", "run_names", "runs_table",
]

RULESET_ORDER = ("recorded", "legacy", "t3_aware")
CHECK_ORDER = ("routing_check", "retrieval_check", "answers_question", "cites_shlokas",
               "follows_template", "no_hallucination")
EVALUATION_KEYS = ["evaluation_id", "run", "ruleset", "rules_hash", "created_at", "duration_s", "n_responses"]


def _ordered(names: list[str]) -> list[str]:
    known = [r for r in RULESET_ORDER if r in names]
    return known + sorted(n for n in names if n not in RULESET_ORDER)


def rulesets(con: duckdb.DuckDBPyConnection, run_name: str | None = None) -> list[str]:
    """Rule sets with a stored evaluation (of this run, or of any run): recorded, legacy, t3_aware first."""
    if run_name is None:
        rows = con.execute("SELECT DISTINCT ruleset FROM evaluations").fetchall()
    else:
        rows = con.execute(
            "SELECT DISTINCT e.ruleset FROM evaluations e JOIN runs r USING (run_id) WHERE r.name = ?", [run_name]
        ).fetchall()
    return _ordered([row[0] for row in rows])


def common_rulesets(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> list[str]:
    """Rule sets under which both runs have a stored evaluation."""
    b = set(rulesets(con, run_b))
    return [r for r in rulesets(con, run_a) if r in b]


def evaluation_info(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, Any] | None:
    rows = con.execute(
        """SELECT e.evaluation_id, r.name, e.ruleset, e.rules_hash, e.created_at, e.duration_s, e.n_responses
           FROM evaluations e JOIN runs r USING (run_id) WHERE e.evaluation_id = ?""",
        [evaluation_id],
    ).fetchall()
    return dict(zip(EVALUATION_KEYS, rows[0], strict=True)) if rows else None


def latest_evaluation(con: duckdb.DuckDBPyConnection, run_name: str, ruleset: str) -> dict[str, Any] | None:
    """The run's newest stored evaluation under this rule set (None when there is none)."""
    rows = con.execute(
        """SELECT e.evaluation_id, r.name, e.ruleset, e.rules_hash, e.created_at, e.duration_s, e.n_responses
           FROM evaluations e JOIN runs r USING (run_id)
           WHERE r.name = ? AND e.ruleset = ? ORDER BY e.evaluation_id DESC LIMIT 1""",
        [run_name, ruleset],
    ).fetchall()
    return dict(zip(EVALUATION_KEYS, rows[0], strict=True)) if rows else None


def runs_table(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The runs of the store with the rule sets each has been evaluated under."""
    evaluated = dict(
        con.execute(
            """SELECT r.name, list(DISTINCT e.ruleset ORDER BY e.ruleset)
               FROM runs r JOIN evaluations e USING (run_id) GROUP BY r.name"""
        ).fetchall()
    )
    rows = list_runs(con)
    for row in rows:
        row["evaluations"] = ", ".join(_ordered(list(evaluated.get(row["name"], []))))
    return rows


def with_wilson(row: dict[str, Any], passed: str = "passed", n: str = "n") -> dict[str, Any]:
    low, high = wilson_interval(int(row[passed]), int(row[n]))
    return {**row, "ci_low": low, "ci_high": high}


def pass_rates_by_run(
    con: duckdb.DuckDBPyConnection, ruleset: str, *, with_overrides: bool = False
) -> tuple[list[dict[str, Any]], list[str]]:
    """Pass rates per run x provider x template, each run under its newest evaluation of `ruleset`.

    Returns the rows (run, evaluation_id, provider, template, n, passed, pass_rate, ci_low, ci_high)
    and the names of the runs that have no evaluation under that rule set.
    """
    latest = con.execute(
        """SELECT r.name, max(e.evaluation_id) FROM runs r JOIN evaluations e USING (run_id)
           WHERE e.ruleset = ? GROUP BY r.name, r.run_id ORDER BY r.run_id""",
        [ruleset],
    ).fetchall()
    rows: list[dict[str, Any]] = []
    for run_name, evaluation_id in latest:
        for row in report.pass_rates(con, int(evaluation_id), with_overrides=with_overrides):
            rows.append(with_wilson({"run": run_name, "evaluation_id": int(evaluation_id), **row}))
    covered = {name for name, _ in latest}
    missing = [name for name in run_names(con) if name not in covered]
    return rows, missing


def check_counts(
    con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """PASS / FAIL / N/A counts per provider x template x check."""
    return report.check_counts(con, evaluation_id, with_overrides=with_overrides)


def flag_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> tuple[list[dict[str, Any]], int | None]:
    """Flag counts per provider, and the evaluation they come from (recorded verdicts carry no flags,
    so for them it is the run's newest computed evaluation; None when there is none)."""
    source = report.flags_evaluation_id(con, evaluation_id)
    return report.flag_counts(con, evaluation_id), source
