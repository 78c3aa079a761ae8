"""Effective verdicts: the latest reviewer override, else what the evaluation computed.

The one definition of that rule: every query that applies overrides builds its SQL from
the pieces here (tests/evaluator/test_layout.py fails when another module orders overrides
itself). Overrides are judgements about a response, so they apply to every evaluation of it;
each override also records the evaluation it was made against, for the audit trail. An
'overall' override decides the overall verdict; otherwise the overall verdict follows from
the effective check verdicts (every check that is not N/A passed).

Parameters are named: pass ``evaluation="$evaluation_id"`` (or another ``$name``) and bind that
name.
"""

from __future__ import annotations

import duckdb


def latest_overrides_cte(name: str = "latest_overrides", *, columns: str = "response_id, target, new_value",
                         where: str = "") -> str:
    """CTE ``name(columns)``: the latest override per (response, target), among those ``where`` keeps.

    Latest is the highest id, as ids come from one sequence in write order (timestamps can tie
    within a transaction or step back with the clock). ``where`` filters rows of ``overrides``
    (whole (response, target) groups, so the latest stays the latest); its parameters are the caller's.
    """
    where_sql = f"WHERE {where}" if where else ""
    return f"""
{name} AS (
    SELECT {columns}
    FROM overrides {where_sql}
    QUALIFY row_number() OVER (PARTITION BY response_id, target ORDER BY override_id DESC) = 1
)"""


# The latest override per (response, target) as CTE `latest_overrides`. Parameters: none.
LATEST_OVERRIDES = latest_overrides_cte()


def effective_check_verdict(override: str = "o", computed: str = "c.verdict") -> str:
    """A check's effective verdict: the override joined as ``override`` (NULL when none), else ``computed``."""
    return f"coalesce({override}.new_value, {computed})"


def overall_from_checks(effective_checks: str) -> str:
    """Aggregate over one response's rows: FAIL when any effective check verdict FAILs, else PASS."""
    return f"CASE WHEN bool_or({effective_checks} = 'FAIL') THEN 'FAIL' ELSE 'PASS' END"


def effective_overall(overall_override: str, from_checks: str) -> str:
    """The overall verdict: an 'overall' override (``overall_override``, NULL when none) decides,
    else the verdict that follows from the checks."""
    return f"coalesce({overall_override}, {from_checks})"


def _only(column: str, among: str) -> str:
    # A filter written inside the CTE, on the scanned table's column: DuckDB hands it to the scan (a
    # PostgreSQL store's index), which it does not do for one on the CTE's output across the joins.
    return f" AND {column} IN ({among})" if among else ""


def check_results_cte(with_overrides: bool, evaluation: str, among: str = "") -> str:
    """CTE `eff_checks(response_id, check_name, verdict, computed, overridden)` for the evaluation
    bound to ``evaluation`` (a ``$name``; once); only the responses ``among`` lists (what goes inside
    ``IN (…)``, evaluator.store.sql_params.Params.among), when given."""
    if not with_overrides:
        return f"""eff_checks AS (
            SELECT response_id, check_name, verdict, verdict AS computed, false AS overridden
            FROM check_results WHERE evaluation_id = {evaluation}{_only("response_id", among)})"""
    return LATEST_OVERRIDES + f""",
        eff_checks AS (
            SELECT c.response_id, c.check_name, {effective_check_verdict()} AS verdict,
                   c.verdict AS computed, o.new_value IS NOT NULL AS overridden
            FROM check_results c
            LEFT JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.check_name
            WHERE c.evaluation_id = {evaluation}{_only("c.response_id", among)})"""


def response_results_cte(with_overrides: bool, evaluation: str, among: str = "",
                         reviewed: str = "SELECT response_id FROM latest_overrides") -> str:
    """CTE `eff(response_id, overall, computed_overall, overridden, is_t3, template_group)` for the
    evaluation bound to ``evaluation`` (a ``$name``; once); only the responses ``among`` lists, when given
    (as in check_results_cte). ``reviewed``: what goes inside ``IN (…)`` for the responses a reviewer
    overrode (``Params.among(reviewed_ids(con))`` names them, so a PostgreSQL store reads only their
    check results, by its index).
    """
    if not with_overrides:
        return f"""eff AS (
            SELECT response_id, overall, overall AS computed_overall, false AS overridden, is_t3, template_group
            FROM response_results WHERE evaluation_id = {evaluation}{_only("response_id", among)})"""
    return LATEST_OVERRIDES + f""",
        overridden_checks AS (
            -- Responses with a check override: any effective check verdict FAIL? Only the few
            -- reviewed responses' checks are read, not the evaluation's millions.
            SELECT c.response_id,
                   bool_or({effective_check_verdict()} = 'FAIL') AS any_fail
            FROM (SELECT * FROM check_results WHERE evaluation_id = {evaluation} AND response_id IN ({reviewed})
                  {_only("response_id", among)}) c
            LEFT JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.check_name
            GROUP BY c.response_id
            HAVING bool_or(o.response_id IS NOT NULL)
        ),
        eff AS (
            SELECT rr.response_id,
                   {effective_overall("oo.new_value", '''CASE WHEN oc.response_id IS NULL THEN rr.overall
                                 WHEN oc.any_fail THEN 'FAIL' ELSE 'PASS' END''')} AS overall,
                   rr.overall AS computed_overall,
                   (oo.new_value IS NOT NULL OR oc.response_id IS NOT NULL) AS overridden,
                   rr.is_t3, rr.template_group
            FROM response_results rr
            LEFT JOIN latest_overrides oo ON oo.response_id = rr.response_id AND oo.target = 'overall'
            LEFT JOIN overridden_checks oc ON oc.response_id = rr.response_id
            WHERE rr.evaluation_id = {evaluation}{_only("rr.response_id", among)})"""


def reviewed_ids(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The responses a reviewer overrode (any target, any run): few, so a query can name them one by one
    (``reviewed`` of response_results_cte) and a PostgreSQL store reads their rows by its index."""
    return [int(row[0]) for row in con.execute(
        f"WITH {LATEST_OVERRIDES} SELECT DISTINCT response_id FROM latest_overrides ORDER BY 1").fetchall()]
