"""Aggregates of one evaluation: pass rates, check verdict counts, flag counts (all in SQL)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb

from evaluator.queries.effective import (
    check_results_cte,
    response_results_cte,
)
from evaluator.store.db import fetch_one


def _dicts(cursor: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def query_dicts(con: duckdb.DuckDBPyConnection, sql: str,
                params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts; ``params`` binds the SQL's ``$name`` parameters."""
    return _dicts(con.execute(sql, dict(params or {})))


def pass_rates(con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False) -> list[dict]:
    return query_dicts(
        con,
        f"""WITH {response_results_cte(with_overrides, "$evaluation_id")}
            SELECT r.provider, eff.template_group AS template, count(*) AS n,
                   count(*) FILTER (WHERE eff.overall = 'PASS') AS passed,
                   count(*) FILTER (WHERE eff.overall = 'PASS') / count(*) AS pass_rate
            FROM eff JOIN responses r ON r.response_id = eff.response_id
            GROUP BY r.provider, eff.template_group ORDER BY r.provider, eff.template_group""",
        {"evaluation_id": evaluation_id},
    )


def check_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False) -> list[dict]:
    return query_dicts(
        con,
        f"""WITH {check_results_cte(with_overrides, "$evaluation_id")}
            SELECT r.provider, rr.template_group AS template, c.check_name AS "check",
                   count(*) FILTER (WHERE c.verdict = 'PASS') AS pass,
                   count(*) FILTER (WHERE c.verdict = 'FAIL') AS fail,
                   count(*) FILTER (WHERE c.verdict = 'N/A') AS na
            FROM eff_checks c
            JOIN responses r ON r.response_id = c.response_id
            JOIN response_results rr ON rr.response_id = c.response_id AND rr.evaluation_id = $evaluation_id
            GROUP BY ALL ORDER BY r.provider, rr.template_group, c.check_name""",
        {"evaluation_id": evaluation_id},
    )


def flags_evaluation_id(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> int | None:
    """Flags come from computed evaluations; for recorded verdicts, the run's latest computed one."""
    row = fetch_one(
        con,
        """SELECT max(e2.evaluation_id) FROM evaluations e JOIN evaluations e2 ON e2.run_id = e.run_id
           WHERE e.evaluation_id = $evaluation_id
             AND (e2.evaluation_id = e.evaluation_id OR (e.ruleset = 'recorded' AND e2.ruleset <> 'recorded'))
             AND e2.ruleset <> 'recorded'""",
        {"evaluation_id": evaluation_id},
    )
    return None if row is None or row[0] is None else int(row[0])


def flag_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> list[dict]:
    source = flags_evaluation_id(con, evaluation_id)
    if source is None:
        return []
    return query_dicts(
        con,
        """SELECT provider, flag, sum(n)::BIGINT AS count FROM flag_counts
           WHERE evaluation_id = $evaluation_id GROUP BY ALL ORDER BY provider, flag""",
        {"evaluation_id": source},
    )


def report(con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False) -> dict[str, Any]:
    return {
        "pass_rates": pass_rates(con, evaluation_id, with_overrides=with_overrides),
        "checks": check_counts(con, evaluation_id, with_overrides=with_overrides),
        "flags": flag_counts(con, evaluation_id),
    }
