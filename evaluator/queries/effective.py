"""Effective verdicts: the latest reviewer override, else what the evaluation computed.

Overrides are judgements about a response, so they apply to every evaluation of it; each
override also records the evaluation it was made against, for the audit trail. An
'overall' override decides the overall verdict; otherwise the overall verdict follows
from the effective check verdicts (every check that is not N/A passed).
"""

from __future__ import annotations

# Latest override per (response, target): the highest id, as ids come from one sequence in
# write order (timestamps can tie within a transaction or step back with the clock). Parameters: none.
LATEST_OVERRIDES = """
latest_overrides AS (
    SELECT response_id, target, new_value
    FROM (SELECT *, row_number() OVER (PARTITION BY response_id, target
                                       ORDER BY override_id DESC) AS recency
          FROM overrides)
    WHERE recency = 1
)"""


def check_results_cte(with_overrides: bool) -> str:
    """CTE `eff_checks(response_id, check_name, verdict, computed, overridden)` for evaluation ?."""
    if not with_overrides:
        return """eff_checks AS (
            SELECT response_id, check_name, verdict, verdict AS computed, false AS overridden
            FROM check_results WHERE evaluation_id = ?)"""
    return LATEST_OVERRIDES + """,
        eff_checks AS (
            SELECT c.response_id, c.check_name, coalesce(o.new_value, c.verdict) AS verdict,
                   c.verdict AS computed, o.new_value IS NOT NULL AS overridden
            FROM check_results c
            LEFT JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.check_name
            WHERE c.evaluation_id = ?)"""


def response_results_cte(with_overrides: bool) -> str:
    """CTE `eff(response_id, overall, computed_overall, overridden, is_t3, template_group)` for evaluation ?.

    Without overrides it takes one parameter (the evaluation id); with them, two (the same id twice).
    """
    if not with_overrides:
        return """eff AS (
            SELECT response_id, overall, overall AS computed_overall, false AS overridden, is_t3, template_group
            FROM response_results WHERE evaluation_id = ?)"""
    return LATEST_OVERRIDES + """,
        overridden_checks AS (
            -- Responses with a check override: any effective check verdict (override, else computed)
            -- FAIL? Only the few reviewed responses' checks are read, not the evaluation's millions.
            SELECT c.response_id,
                   bool_or(coalesce(o.new_value, c.verdict) = 'FAIL') AS any_fail
            FROM check_results c
            LEFT JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.check_name
            WHERE c.evaluation_id = ? AND c.response_id IN (SELECT response_id FROM latest_overrides)
            GROUP BY c.response_id
            HAVING bool_or(o.response_id IS NOT NULL)
        ),
        eff AS (
            SELECT rr.response_id,
                   coalesce(oo.new_value,
                            CASE WHEN oc.response_id IS NULL THEN rr.overall
                                 WHEN oc.any_fail THEN 'FAIL' ELSE 'PASS' END) AS overall,
                   rr.overall AS computed_overall,
                   (oo.new_value IS NOT NULL OR oc.response_id IS NOT NULL) AS overridden,
                   rr.is_t3, rr.template_group
            FROM response_results rr
            LEFT JOIN latest_overrides oo ON oo.response_id = rr.response_id AND oo.target = 'overall'
            LEFT JOIN overridden_checks oc ON oc.response_id = rr.response_id
            WHERE rr.evaluation_id = ?)"""


def response_results_params(evaluation_id: int, with_overrides: bool) -> list[int]:
    return [evaluation_id, evaluation_id] if with_overrides else [evaluation_id]
