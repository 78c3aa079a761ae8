"""Per-response outcome rows derived from stored check results (shared by every evaluation)."""

from __future__ import annotations

import duckdb

# T3 when the bot used T3 or the golden set expects it (SPEC §4); otherwise the golden
# template groups the pass rates, falling back to what the bot used.
TEMPLATE_GROUP_SQL = """
    CASE WHEN coalesce(r.template = 'T3', false) OR coalesce(q.expected_template = 'T3', false) THEN 'T3'
         ELSE coalesce(q.expected_template, r.template, 'none') END
"""
IS_T3_SQL = "(coalesce(r.template = 'T3', false) OR coalesce(q.expected_template = 'T3', false))"


def write_response_results(con: duckdb.DuckDBPyConnection, evaluation_id: int, run_id: int) -> None:
    """Overall = every check that is not N/A passed (SPEC §4), for the responses the evaluation has checks of."""
    con.execute(
        f"""INSERT INTO response_results
            SELECT ?, r.response_id,
                   CASE WHEN bool_or(c.verdict = 'FAIL') THEN 'FAIL' ELSE 'PASS' END,
                   {IS_T3_SQL}, {TEMPLATE_GROUP_SQL}
            FROM responses r
            JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
            JOIN check_results c ON c.response_id = r.response_id AND c.evaluation_id = ?
            WHERE r.run_id = ?
            GROUP BY r.response_id, r.template, q.expected_template""",
        [evaluation_id, evaluation_id, run_id],
    )
