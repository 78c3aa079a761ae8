"""Per-response outcome rows derived from stored check results (shared by every evaluation)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from evaluator.store.db import fetch_value

# The engines' outcome rows, as Arrow tables (without the evaluation's id).
CHECKS_SCHEMA = pa.schema([("response_id", pa.int64()), ("check_name", pa.string()), ("verdict", pa.string()),
                           ("reason", pa.string()), ("spans", pa.string())])
FLAGS_SCHEMA = pa.schema([("response_id", pa.int64()), ("flag", pa.string()), ("severity", pa.string()),
                          ("spans", pa.string())])
OVERALL_SCHEMA = pa.schema([("response_id", pa.int64()), ("overall", pa.string())])

# T3 when the bot used T3 or the golden set expects it (SPEC §4); otherwise the golden
# template groups the pass rates, falling back to what the bot used.
TEMPLATE_GROUP_SQL = """
    CASE WHEN coalesce(r.template = 'T3', false) OR coalesce(q.expected_template = 'T3', false) THEN 'T3'
         ELSE coalesce(q.expected_template, r.template, 'none') END
"""
IS_T3_SQL = "(coalesce(r.template = 'T3', false) OR coalesce(q.expected_template = 'T3', false))"

# An evaluator's rows appended as evaluation $evaluation, per table: ``{rows}`` is a relation of
# the engine's columns (recompute.CHECKS_SCHEMA, FLAGS_SCHEMA, OVERALL_SCHEMA), ``{into}`` the
# database prefix ('' or 'alias.'); responses and questions give each outcome its template group.
APPEND_SQL = {
    "response_results": f"""INSERT INTO {{into}}response_results
        SELECT $evaluation, o.response_id, o.overall, {IS_T3_SQL}, {TEMPLATE_GROUP_SQL}
        FROM {{rows}} o JOIN responses r ON r.response_id = o.response_id
        JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id""",
    "check_results": """INSERT INTO {into}check_results
        SELECT $evaluation, response_id, check_name, verdict, reason, spans::JSON FROM {rows}""",
    "flags": "INSERT INTO {into}flags SELECT $evaluation, response_id, flag, severity, spans::JSON FROM {rows}",
}


def write_response_results(con: duckdb.DuckDBPyConnection, evaluation_id: int, run_id: int) -> None:
    """Overall = every check that is not N/A passed (SPEC §4), for the responses the evaluation has checks of."""
    con.execute(
        f"""INSERT INTO response_results
            SELECT $evaluation_id, r.response_id,
                   CASE WHEN bool_or(c.verdict = 'FAIL') THEN 'FAIL' ELSE 'PASS' END,
                   {IS_T3_SQL}, {TEMPLATE_GROUP_SQL}
            FROM responses r
            JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
            JOIN check_results c ON c.response_id = r.response_id AND c.evaluation_id = $evaluation_id
            WHERE r.run_id = $run_id
            GROUP BY r.response_id, r.template, q.expected_template""",
        {"evaluation_id": evaluation_id, "run_id": run_id},
    )


def write_evaluation_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> None:
    """Verdict counts per provider x template group x target ('overall' or a check) of a written
    evaluation (read by evaluator.queries.counts instead of aggregating every result each time)."""
    con.execute(
        """INSERT INTO evaluation_counts
           SELECT rr.evaluation_id, r.provider, rr.template_group, 'overall', rr.overall, count(*)
           FROM response_results rr JOIN responses r ON r.response_id = rr.response_id
           WHERE rr.evaluation_id = $evaluation_id
           GROUP BY ALL""",
        {"evaluation_id": evaluation_id},
    )
    con.execute(
        """INSERT INTO evaluation_counts
           SELECT c.evaluation_id, r.provider, rr.template_group, c.check_name, c.verdict, count(*)
           FROM check_results c
           JOIN response_results rr ON rr.evaluation_id = c.evaluation_id AND rr.response_id = c.response_id
           JOIN responses r ON r.response_id = c.response_id
           WHERE c.evaluation_id = $evaluation_id
           GROUP BY ALL""",
        {"evaluation_id": evaluation_id},
    )
    write_flag_counts(con, evaluation_id)


def write_flag_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int, flag: str | None = None) -> None:
    """Flag counts per provider of a written evaluation (read by the Overview instead of counting every
    flag each time); with `flag`, that flag's counts written again (its rows were replaced)."""
    only = " AND f.flag = $flag" if flag is not None else ""
    params = {"evaluation_id": evaluation_id, **({"flag": flag} if flag is not None else {})}
    con.execute("DELETE FROM flag_counts WHERE evaluation_id = $evaluation_id"
                + (" AND flag = $flag" if flag is not None else ""), params)
    con.execute(
        f"""INSERT INTO flag_counts
            SELECT f.evaluation_id, r.provider, f.flag, count(*)
            FROM flags f JOIN responses r ON r.response_id = f.response_id
            WHERE f.evaluation_id = $evaluation_id{only}
            GROUP BY ALL""",
        params,
    )


def write_run_sizes(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """A stored run's providers, questions and first response id, counted once (read by the run lists and
    the response picker)."""
    providers, first = con.execute(
        "SELECT count(DISTINCT provider), min(response_id) FROM responses WHERE run_id = $run", {"run": run_id}
    ).fetchall()[0]
    questions = fetch_value(con, "SELECT count(*) FROM questions WHERE run_id = $run", {"run": run_id})
    con.execute("""UPDATE runs SET n_providers = $providers, n_questions = $questions, first_response_id = $first
                   WHERE run_id = $run""", {"providers": providers, "questions": questions, "first": first,
                                            "run": run_id})
