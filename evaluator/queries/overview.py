"""The Overview page: runs, pass rates per run x provider x template, check verdicts, flags.

Also the SQL building blocks the other PM query modules share (before_after, compare): the
stored evaluations of a run, and effective verdicts that scale. Every figure is an aggregate
computed in DuckDB, filtered by evaluation id first; Python only adds Wilson intervals to the
few aggregated rows.

Effective verdicts follow evaluator/queries/effective.py exactly (the latest override per
response and target; an 'overall' override decides; otherwise any effective check FAIL
fails), but are computed only for the responses a reviewer touched — a handful — instead of
re-deriving every response's verdict from its checks: the rest keep their stored overall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from evaluator.queries import report
from evaluator.queries.report import query_dicts
from evaluator.queries.runs import list_runs, run_names
from evaluator.stats import wilson_interval

__all__ = [
    "CHECK_ORDER", "RULESET_ORDER", "check_counts", "common_rulesets", "evaluation_info", "flag_counts",
    "latest_evaluation", "pass_rate_counts", "pass_rates_by_run", "query_dicts", "REVIEWS_CTE",
    "reviewed_cte", "rulesets", "run_names", "runs_table", "verdicts_cte",
]

RULESET_ORDER = ("recorded", "legacy", "t3_aware")
CHECK_ORDER = ("routing_check", "retrieval_check", "answers_question", "cites_shlokas",
               "follows_template", "no_hallucination")
CHECK_LIST_SQL = "[" + ", ".join(f"'{c}'" for c in CHECK_ORDER) + "]"
EVALUATION_KEYS = ["evaluation_id", "run", "ruleset", "rules_hash", "created_at", "duration_s", "n_responses"]

# The latest override per (response, target). No parameters.
REVIEWS_CTE = """reviews AS (
    SELECT response_id, target, new_value FROM overrides
    QUALIFY row_number() OVER (PARTITION BY response_id, target ORDER BY override_id DESC) = 1
)"""


def reviewed_cte(name: str, n_evaluations: int = 1) -> str:
    """CTE `name(evaluation_id, response_id, pass)`: whether the effective overall verdict is PASS, for every
    response a reviewer overrode (overall or a check), under the evaluation(s) bound to its `n_evaluations`
    parameters. Needs REVIEWS_CTE before it."""
    return f"""{name} AS (
        SELECT c.evaluation_id, c.response_id,
               coalesce(any_value(oo.new_value),
                        CASE WHEN bool_or(coalesce(o.new_value, c.verdict) = 'FAIL') THEN 'FAIL' ELSE 'PASS' END)
                   = 'PASS' AS pass
        FROM check_results c
        LEFT JOIN reviews o ON o.response_id = c.response_id AND o.target = c.check_name
        LEFT JOIN reviews oo ON oo.response_id = c.response_id AND oo.target = 'overall'
        WHERE c.evaluation_id IN ({', '.join('?' * n_evaluations)})
          AND c.response_id IN (SELECT response_id FROM reviews)
        GROUP BY c.evaluation_id, c.response_id
        HAVING bool_or(o.new_value IS NOT NULL) OR bool_or(oo.new_value IS NOT NULL)
    )"""


def verdicts_cte(name: str, with_overrides: bool, n_evaluations: int = 1) -> str:
    """CTEs ending in `name(evaluation_id, response_id, pass, computed_pass, reviewed_pass, template_group)` for
    the evaluation(s) bound to its parameters (bind the ids twice: the reviewed part's, then its own).
    Needs REVIEWS_CTE before it.

    Verdicts are booleans (PASS = true), which keeps the joins of a million rows light. `pass` is the
    effective verdict when with_overrides, else the computed one; `reviewed_pass` is the effective verdict
    of the responses a reviewer overrode (NULL for the others), in both cases.
    """
    marks = ", ".join("?" * n_evaluations)
    return f"""{reviewed_cte(name + '_reviewed', n_evaluations)},
        {name} AS (
            SELECT rr.evaluation_id, rr.response_id,
                   {"coalesce(x.pass, rr.overall = 'PASS')" if with_overrides else "rr.overall = 'PASS'"} AS pass,
                   rr.overall = 'PASS' AS computed_pass, x.pass AS reviewed_pass, rr.template_group
            FROM response_results rr
            LEFT JOIN {name}_reviewed x ON x.evaluation_id = rr.evaluation_id AND x.response_id = rr.response_id
            WHERE rr.evaluation_id IN ({marks})
        )"""


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


EVALUATION_SQL = """SELECT e.evaluation_id, r.name, e.ruleset, e.rules_hash, e.created_at, e.duration_s, e.n_responses
                    FROM evaluations e JOIN runs r USING (run_id)"""


def evaluation_info(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, Any] | None:
    rows = con.execute(EVALUATION_SQL + " WHERE e.evaluation_id = ?", [evaluation_id]).fetchall()
    return dict(zip(EVALUATION_KEYS, rows[0], strict=True)) if rows else None


def latest_evaluation(con: duckdb.DuckDBPyConnection, run_name: str, ruleset: str) -> dict[str, Any] | None:
    """The run's newest stored evaluation under this rule set (None when there is none)."""
    rows = con.execute(
        EVALUATION_SQL + " WHERE r.name = ? AND e.ruleset = ? ORDER BY e.evaluation_id DESC LIMIT 1",
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


def pass_rate_counts(
    con: duckdb.DuckDBPyConnection, evaluation_ids: Sequence[int], *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """Responses and passes per evaluation x provider x template, for several evaluations.

    From the counts stored with each evaluation; with overrides, corrected by the responses a
    reviewer overrode (their effective verdict replaces the computed one)."""
    if not evaluation_ids:
        return []
    ids = [int(i) for i in evaluation_ids]
    marks = ", ".join("?" * len(ids))
    computed = f"""computed AS (
            SELECT evaluation_id, provider, template_group AS template, sum(n)::BIGINT AS n,
                   coalesce(sum(n) FILTER (WHERE verdict = 'PASS'), 0)::BIGINT AS passed
            FROM evaluation_counts WHERE target = 'overall' AND evaluation_id IN ({marks})
            GROUP BY ALL)"""
    if not with_overrides:
        return query_dicts(con, f"""WITH {computed}
            SELECT * FROM computed ORDER BY evaluation_id, provider, template""", ids)
    return query_dicts(
        con,
        f"""WITH {REVIEWS_CTE}, {reviewed_cte("reviewed", len(ids))}, {computed},
            delta AS (
                SELECT x.evaluation_id, r.provider, rr.template_group AS template,
                       sum(x.pass::INTEGER - (rr.overall = 'PASS')::INTEGER) AS d
                FROM reviewed x
                JOIN response_results rr ON rr.evaluation_id = x.evaluation_id AND rr.response_id = x.response_id
                JOIN responses r ON r.response_id = x.response_id
                GROUP BY ALL)
            SELECT c.evaluation_id, c.provider, c.template, c.n, (c.passed + coalesce(d.d, 0))::BIGINT AS passed
            FROM computed c LEFT JOIN delta d USING (evaluation_id, provider, template)
            ORDER BY c.evaluation_id, c.provider, c.template""",
        ids + ids,
    )


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
    run_of = {int(evaluation_id): name for name, evaluation_id in latest}
    rows = [
        with_wilson({"run": run_of[row["evaluation_id"]], **row, "pass_rate": row["passed"] / row["n"]})
        for row in pass_rate_counts(con, list(run_of), with_overrides=with_overrides)
    ]
    order = {evaluation_id: i for i, evaluation_id in enumerate(run_of)}
    rows.sort(key=lambda r: (order[r["evaluation_id"]], r["provider"], r["template"]))
    missing = [name for name in run_names(con) if name not in run_of.values()]
    return rows, missing


def check_counts(
    con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """PASS / FAIL / N/A counts per provider x template x check (effective check verdicts when with_overrides):
    the counts stored with the evaluation, corrected by reviewers' check overrides (each moves one
    response from its computed verdict to the reviewer's)."""
    counted = """SELECT provider, template_group AS template, target AS "check", verdict, n
                 FROM evaluation_counts WHERE evaluation_id = ? AND target <> 'overall'"""
    params = [evaluation_id]
    if with_overrides:
        counted += """
            UNION ALL
            SELECT r.provider, rr.template_group, c.check_name, moved.verdict, moved.n
            FROM reviews o
            JOIN check_results c ON c.evaluation_id = ? AND c.response_id = o.response_id AND c.check_name = o.target
            JOIN response_results rr ON rr.evaluation_id = c.evaluation_id AND rr.response_id = c.response_id
            JOIN responses r ON r.response_id = c.response_id
            CROSS JOIN LATERAL (VALUES (c.verdict, -1), (o.new_value, 1)) AS moved(verdict, n)"""
        params.append(evaluation_id)
    return query_dicts(
        con,
        f"""WITH {REVIEWS_CTE}, counted AS ({counted})
            SELECT provider, template, "check",
                   coalesce(sum(n) FILTER (WHERE verdict = 'PASS'), 0)::BIGINT AS pass,
                   coalesce(sum(n) FILTER (WHERE verdict = 'FAIL'), 0)::BIGINT AS fail,
                   coalesce(sum(n) FILTER (WHERE verdict = 'N/A'), 0)::BIGINT AS na
            FROM counted
            GROUP BY provider, template, "check"
            ORDER BY provider, template, list_position({CHECK_LIST_SQL}, "check"), "check\"""",
        params,
    )


def flag_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> tuple[list[dict[str, Any]], int | None]:
    """Flag counts per provider, and the evaluation they come from (recorded verdicts carry no flags,
    so for them it is the run's newest computed evaluation; None when there is none)."""
    source = report.flags_evaluation_id(con, evaluation_id)
    return report.flag_counts(con, evaluation_id), source
