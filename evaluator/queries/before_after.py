"""The Before/after page: one run under two evaluations A and B (e.g. recorded -> t3_aware).

Everything is aggregated in DuckDB from the two evaluations' rows (filtered by evaluation id
first); the flipped responses are paged in SQL and their check-level diff is computed for the
rows of one page only.

False-failure rate under an evaluation X (the other one is Y): the share of responses that X
fails although they should pass — a reviewer's overrides make the response pass, or, when no
reviewer has ruled on it, Y passes it. A reviewer's ruling wins over Y: a response a reviewer
failed is never a false failure. Denominator: all responses of the group.
"""

from __future__ import annotations

from typing import Any

import duckdb

from evaluator.queries.effective import response_results_cte
from evaluator.queries.overview import (
    CHECK_ORDER,
    RULESET_ORDER,
    evaluation_info,
    latest_evaluation,
    rulesets,
)
from evaluator.queries.report import query_dicts
from evaluator.store import fetch_one

__all__ = [
    "FALSE_FAILURE_DEFINITION", "RULESET_ORDER", "check_changes", "durations", "evaluation_info",
    "flips", "latest_evaluation", "non_t3_changes", "rulesets", "summary",
]

FALSE_FAILURE_DEFINITION = (
    "False-failure rate under an evaluation = responses it fails that should pass, as a share of all "
    "responses of the group. A failed response should pass when a reviewer's overrides make it pass, or, "
    "when no reviewer has ruled on it, the other evaluation passes it (a reviewer's FAIL is never a false "
    "failure)."
)
SLOWER_LIMIT = 1.5  # the fix may take at most 50% longer than the evaluation it replaces
CHECK_LIST_SQL = "[" + ", ".join(f"'{c}'" for c in CHECK_ORDER) + "]"


def _pairs_cte(with_overrides: bool) -> str:
    """CTE `pairs`: one row per response evaluated by both A and B. Parameters: A twice, B twice.

    va / vb are the verdicts shown (effective when with_overrides, else computed); ca / cb the
    computed ones; ra / rb the reviewer's ruling (effective verdict when overridden, else NULL).
    """
    shown_a = "a.overall" if with_overrides else "a.computed_overall"
    shown_b = "b.overall" if with_overrides else "b.computed_overall"
    eff = response_results_cte(True)
    return f"""
        a AS (WITH {eff} SELECT * FROM eff),
        b AS (WITH {eff} SELECT * FROM eff),
        pairs AS (
            SELECT a.response_id, a.template_group AS template,
                   {shown_a} AS va, {shown_b} AS vb,
                   a.computed_overall AS ca, b.computed_overall AS cb,
                   CASE WHEN a.overridden THEN a.overall END AS ra,
                   CASE WHEN b.overridden THEN b.overall END AS rb
            FROM a JOIN b USING (response_id)
        )"""


def _params(evaluation_a: int, evaluation_b: int) -> list[int]:
    return [evaluation_a, evaluation_a, evaluation_b, evaluation_b]


def summary(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """Per provider x template (and per template over all providers, provider '(all)'): n, passes,
    pass rates, false failures and flips of A and B."""
    sql = f"""
        WITH {_pairs_cte(with_overrides)}
        SELECT CASE WHEN grouping(r.provider) = 1 THEN '(all)' ELSE r.provider END AS provider,
               p.template,
               count(*) AS n,
               count(*) FILTER (WHERE p.va = 'PASS') AS passed_a,
               count(*) FILTER (WHERE p.vb = 'PASS') AS passed_b,
               count(*) FILTER (WHERE p.ca = 'FAIL' AND coalesce(p.ra, p.cb) = 'PASS') AS false_failures_a,
               count(*) FILTER (WHERE p.cb = 'FAIL' AND coalesce(p.rb, p.ca) = 'PASS') AS false_failures_b,
               count(*) FILTER (WHERE p.va = 'FAIL' AND p.vb = 'PASS') AS fail_to_pass,
               count(*) FILTER (WHERE p.va = 'PASS' AND p.vb = 'FAIL') AS pass_to_fail
        FROM pairs p JOIN responses r ON r.response_id = p.response_id
        GROUP BY GROUPING SETS ((r.provider, p.template), (p.template))
        ORDER BY grouping(r.provider), r.provider, p.template"""
    rows = query_dicts(con, sql, _params(evaluation_a, evaluation_b))
    for row in rows:
        n = row["n"]
        row["pass_rate_a"] = row["passed_a"] / n
        row["pass_rate_b"] = row["passed_b"] / n
        row["delta"] = row["pass_rate_b"] - row["pass_rate_a"]
        row["false_failure_rate_a"] = row["false_failures_a"] / n
        row["false_failure_rate_b"] = row["false_failures_b"] / n
        row["flipped"] = row["fail_to_pass"] + row["pass_to_fail"]
    return rows


def non_t3_changes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows (per provider) where a verdict outside T3 changed — the fix must not do that."""
    return [r for r in rows if r["provider"] != "(all)" and r["template"] != "T3" and r["flipped"]]


def check_changes(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> list[dict[str, Any]]:
    """Computed check verdicts that differ between A and B, counted per check x template x (A -> B)."""
    return query_dicts(
        con,
        f"""WITH diff AS (
                SELECT response_id, check_name,
                       any_value(verdict) FILTER (WHERE evaluation_id = ?) AS verdict_a,
                       any_value(verdict) FILTER (WHERE evaluation_id = ?) AS verdict_b
                FROM check_results WHERE evaluation_id IN (?, ?)
                GROUP BY response_id, check_name
                HAVING verdict_a IS DISTINCT FROM verdict_b
            )
            SELECT d.check_name AS "check", rr.template_group AS template,
                   coalesce(d.verdict_a, '-') AS verdict_a, coalesce(d.verdict_b, '-') AS verdict_b,
                   count(*) AS responses
            FROM diff d JOIN response_results rr ON rr.response_id = d.response_id AND rr.evaluation_id = ?
            GROUP BY d.check_name, rr.template_group, d.verdict_a, d.verdict_b
            ORDER BY list_position({CHECK_LIST_SQL}, d.check_name), d.check_name, template, verdict_a, verdict_b""",
        [evaluation_a, evaluation_b, evaluation_a, evaluation_b, evaluation_a],
    )


def flips(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False,
    provider: str | None = None, template: str | None = None, limit: int = 50, offset: int = 0,
) -> tuple[int, list[dict[str, Any]]]:
    """Responses whose overall verdict differs between A and B: (how many, one page of them).

    Each row: question_id, provider, template, question, verdict_a, verdict_b, check_diff
    (e.g. 'cites_shlokas FAIL → N/A'), comment (from the run file) and reviewer (latest overrides).
    """
    where = ["p.va <> p.vb"]
    params: list[Any] = _params(evaluation_a, evaluation_b)
    if provider:
        where.append("r.provider = ?")
        params.append(provider)
    if template:
        where.append("p.template = ?")
        params.append(template)
    base = f"""
        WITH {_pairs_cte(with_overrides)},
        flipped AS (
            SELECT p.response_id, r.run_id, r.question_id, r.provider, p.template, p.va, p.vb, r.comment,
                   min(p.response_id) OVER (PARTITION BY r.question_id) AS question_order
            FROM pairs p JOIN responses r ON r.response_id = p.response_id
            WHERE {' AND '.join(where)}
        )"""
    total_row = fetch_one(con, base + " SELECT count(*) FROM flipped", params)
    total = int(total_row[0]) if total_row else 0
    if total == 0:
        return 0, []
    rows = query_dicts(
        con,
        base + f""",
        page AS (SELECT * FROM flipped ORDER BY template, question_order, question_id, provider LIMIT ? OFFSET ?),
        diff AS (
            SELECT ca.response_id,
                   string_agg(ca.check_name || ' ' || ca.verdict || ' → ' || cb.verdict, '; '
                              ORDER BY list_position({CHECK_LIST_SQL}, ca.check_name)) AS check_diff
            FROM check_results ca
            JOIN check_results cb ON cb.evaluation_id = ? AND cb.response_id = ca.response_id
                                 AND cb.check_name = ca.check_name
            WHERE ca.evaluation_id = ? AND ca.response_id IN (SELECT response_id FROM page)
              AND cb.response_id IN (SELECT response_id FROM page)
              AND ca.verdict <> cb.verdict
            GROUP BY ca.response_id
        ),
        reviewed AS (
            SELECT response_id,
                   string_agg(target || ' → ' || new_value || ' (' || reviewer || ': ' || reason || ')', '; '
                              ORDER BY target) AS reviewer
            FROM (SELECT * FROM overrides WHERE response_id IN (SELECT response_id FROM page)
                  QUALIFY row_number() OVER (PARTITION BY response_id, target
                                             ORDER BY created_at DESC, override_id DESC) = 1)
            GROUP BY response_id
        )
        SELECT pg.question_id, pg.provider, pg.template, q.question, pg.va AS verdict_a, pg.vb AS verdict_b,
               coalesce(d.check_diff, '(no check changed: a reviewer override decides)') AS check_diff,
               pg.comment, rv.reviewer, pg.response_id
        FROM page pg
        JOIN questions q ON q.run_id = pg.run_id AND q.question_id = pg.question_id
        LEFT JOIN diff d ON d.response_id = pg.response_id
        LEFT JOIN reviewed rv ON rv.response_id = pg.response_id
        ORDER BY pg.template, pg.question_order, pg.question_id, pg.provider""",
        [*params, limit, offset, evaluation_b, evaluation_a],
    )
    return total, rows


def durations(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> dict[str, Any]:
    """Both evaluations' durations and B's relative to A (None when either has none, e.g. recorded)."""
    a = evaluation_info(con, evaluation_a) or {}
    b = evaluation_info(con, evaluation_b) or {}
    da, db = a.get("duration_s"), b.get("duration_s")
    ratio = db / da if da and db is not None else None
    return {
        "a_s": da, "b_s": db, "ratio": ratio,
        "within_limit": None if ratio is None else ratio <= SLOWER_LIMIT,
        "limit": SLOWER_LIMIT,
    }
