"""SQL behind the Review page (and the per-response details Triage shows): one response in full.

Verdicts are effective ones (latest override, else computed; evaluator.queries.effective).
Highlight spans come from the evaluation when it stored them, else they are computed for
display with the evaluation's own rules text, rule set and profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from evaluator.core.types import CHECK_NAMES, FLAG_NAMES
from evaluator.queries.effective import check_results_cte, latest_overrides_cte, response_results_cte
from evaluator.queries.report import flags_evaluation_id, query_dicts
from evaluator.review.overrides import carried_candidates, history
from evaluator.store.db import fetch_one
from evaluator.store.sql_params import Params

__all__ = [
    "carried_candidates", "checks", "default_evaluation", "evaluation_label", "evaluations_of_run", "flags",
    "history", "overall", "refused_state", "response", "response_choices", "retrieved", "run_id",
    "display_rules", "override_targets",
]

RESPONSE_SQL = """
SELECT r.response_id, r.run_id, run.name AS run, run.profile, r.question_id, r.provider, r.model,
       r.answer, r.answer_hash, r.template, r.classification,
       r.answerable, r.comment, r.outcome, r.metadata,
       coalesce(r.retrieval_recorded, true) AS retrieval_recorded
FROM responses r
JOIN runs run ON run.run_id = r.run_id
WHERE r.response_id = $response_id
"""
RESPONSE_COLUMNS = (
    "response_id", "run_id", "run", "profile", "question_id", "question", "provider", "model", "answer",
    "answer_hash", "template", "expected_template", "expected_routing", "classification", "answerable",
    "comment", "outcome", "metadata", "gold_answers", "expected_ids", "retrieval_recorded")
# The response's question, read by its bound run and id (joined, a PostgreSQL store would send
# every question of the store for the join).
QUESTION_SQL = """
SELECT question, expected_template, expected_routing, gold_answers, expected_ids
FROM questions WHERE run_id = $run_id AND question_id = $question_id
"""


def response(con: duckdb.DuckDBPyConnection, response_id: int) -> dict[str, Any] | None:
    rows = query_dicts(con, RESPONSE_SQL, {"response_id": response_id})
    if not rows:
        return None
    row = rows[0]
    questions = query_dicts(con, QUESTION_SQL, {"run_id": row["run_id"], "question_id": row["question_id"]})
    if not questions:  # every response has its question (ingest writes both); as the join did: none
        return None
    found = {**row, **questions[0]}
    return {name: found[name] for name in RESPONSE_COLUMNS}


def evaluations_of_run(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict[str, Any]]:
    """The run's evaluations, computed ones first (newest first), recorded verdicts last."""
    return query_dicts(
        con,
        """SELECT evaluation_id, ruleset, rules_hash, created_at, profile, with_spans
           FROM evaluations WHERE run_id = $run_id
           ORDER BY ruleset = 'recorded', evaluation_id DESC""",
        {"run_id": run_id},
    )


def default_evaluation(evaluations: Sequence[dict[str, Any]]) -> int | None:
    """The latest t3_aware evaluation (the fixed rules), else the first listed."""
    for evaluation in evaluations:
        if evaluation["ruleset"] == "t3_aware":
            return int(evaluation["evaluation_id"])
    return int(evaluations[0]["evaluation_id"]) if evaluations else None


def evaluation_label(evaluation: dict[str, Any]) -> str:
    when = evaluation["created_at"].strftime("%Y-%m-%d %H:%M") if evaluation.get("created_at") else ""
    return f"{evaluation['ruleset']} · #{evaluation['evaluation_id']} · {when}".strip(" ·")


def overall(con: duckdb.DuckDBPyConnection, evaluation_id: int, response_id: int) -> dict[str, Any] | None:
    rows = query_dicts(
        con,
        f"WITH {response_results_cte(True, '$evaluation_id', '$response_id')} SELECT * FROM eff",
        {"evaluation_id": evaluation_id, "response_id": response_id},
    )
    return rows[0] if rows else None


def _order(name: str) -> int:
    return CHECK_NAMES.index(name) if name in CHECK_NAMES else len(CHECK_NAMES)


def checks(con: duckdb.DuckDBPyConnection, evaluation_id: int, response_ids: Sequence[int]
           ) -> dict[int, list[dict[str, Any]]]:
    """Effective check verdicts with reasons, per response, in SPEC order."""
    ids = Params("id")
    among = ids.among(response_ids)
    rows = query_dicts(
        con,
        f"""WITH {check_results_cte(True, "$evaluation_id", among)}
            SELECT ec.response_id, ec.check_name AS "check", ec.verdict, ec.computed, ec.overridden, c.reason
            FROM eff_checks ec
            JOIN check_results c ON c.evaluation_id = $evaluation_id AND c.response_id = ec.response_id
                                AND c.check_name = ec.check_name
            WHERE c.response_id IN ({among})""",
        {"evaluation_id": evaluation_id, **ids.values},
    )
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    for row in sorted(rows, key=lambda r: (_order(r["check"]), r["check"])):
        out[int(row.pop("response_id"))].append(row)
    return out


def flags(con: duckdb.DuckDBPyConnection, evaluation_id: int, response_ids: Sequence[int]
          ) -> dict[int, list[dict[str, Any]]]:
    """Output flags (§5) per response; for recorded verdicts, those of the run's latest computed evaluation."""
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    source = flags_evaluation_id(con, evaluation_id)
    if source is None:
        return out
    ids = Params("id")
    for row in query_dicts(
        con,
        f"""SELECT response_id, flag, severity FROM flags
           WHERE evaluation_id = $evaluation_id AND response_id IN ({ids.among(response_ids)})
           -- SPEC §5 order (the registry's), flags it does not know last
           ORDER BY response_id, coalesce(list_position($flag_order::VARCHAR[], flag), $n_flags + 1), flag""",
        {"evaluation_id": source, "flag_order": list(FLAG_NAMES), "n_flags": len(FLAG_NAMES), **ids.values},
    ):
        out[int(row.pop("response_id"))].append(row)
    return out


def retrieved(con: duckdb.DuckDBPyConnection, response_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    ids = Params("id")
    for row in query_dicts(
        con,
        f"""SELECT rt.response_id, rt.rank, c.chunk_id AS id, rt.score, c.text
           FROM retrieved rt JOIN chunks c ON c.chunk_key = rt.chunk_key
           WHERE rt.response_id IN ({ids.among(response_ids)})
           ORDER BY rt.response_id, rt.rank""",
        ids.values,
    ):
        out[int(row.pop("response_id"))].append(row)
    return out


def display_rules(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, Any]:
    """The similarity threshold and banner texts of the rules the evaluation ran with
    (the rules file in force for recorded verdicts; the built-in rules if stored ones no longer load)."""
    from evaluator.rules.load import load_rules, rules_from_text

    source = span_evaluation(con, evaluation_id)
    try:
        rules = (rules_from_text(source["rules_text"], source["rules_source"] or "<stored>")
                 if source and source["rules_text"] else load_rules())
    except ValueError:  # stored rules from an older schema: show with the built-in ones rather than fail
        rules = load_rules(None)
    defaults = load_rules(None)
    banners = {flag.name: flag.banner for flag in (*defaults.flag_rules, *rules.flag_rules) if flag.banner}
    return {"threshold": float(rules.min_score), "banners": banners}


def override_targets(con: duckdb.DuckDBPyConnection, evaluation_id: int, response_id: int, profile: str | None
                     ) -> list[str]:
    """What a reviewer may override on this response (evaluator.review.overrides.targets_for) less the checks
    the bot's profile does not run (shown "not applicable to this bot"): no verdict of them to correct.
    The profile's checks come from the rules the evaluation ran with; all are offered when unknown."""
    from evaluator.review.overrides import targets_for
    from evaluator.rules.load import load_rules, rules_from_text

    targets = targets_for(con, response_id)
    source = span_evaluation(con, evaluation_id)
    try:
        rules = (rules_from_text(source["rules_text"], source["rules_source"] or "<stored>")
                 if source and source["rules_text"] else load_rules())
        bot_checks = set(rules.profile((source or {}).get("profile") or profile or "").checks)
    except ValueError:  # an unknown profile or rules that no longer load: offer everything
        return targets
    return [t for t in targets if t not in CHECK_NAMES or t in bot_checks]


def span_evaluation(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, Any] | None:
    """The evaluation whose spans to show: this one when computed, else the run's latest computed one."""
    source = flags_evaluation_id(con, evaluation_id)
    if source is None:
        return None
    rows = query_dicts(
        con,
        "SELECT evaluation_id, ruleset, rules_text, rules_source, profile, with_spans FROM evaluations "
        "WHERE evaluation_id = $evaluation_id",
        {"evaluation_id": source},
    )
    return rows[0] if rows else None


def refused_state(con: duckdb.DuckDBPyConnection, response_id: int) -> dict[str, Any]:
    """The judge's latest refusal decision (if metrics were computed) and the reviewer's, if any."""
    judge = fetch_one(
        con,
        """SELECT mr.refused, m.judge FROM metric_responses mr JOIN metric_results m USING (metric_result_id)
           WHERE mr.response_id = $response_id AND mr.refused_by = 'judge'
           ORDER BY m.computed_at DESC, m.metric_result_id DESC LIMIT 1""",
        {"response_id": response_id},
    )
    reviewer = fetch_one(
        con,
        f"""WITH {latest_overrides_cte(where="response_id = $response_id AND target = 'refused'")}
            SELECT new_value FROM latest_overrides""",
        {"response_id": response_id},
    )
    return {
        "judge": None if judge is None or judge[0] is None else bool(judge[0]),
        "judge_name": None if judge is None else judge[1],
        "reviewer": None if reviewer is None else reviewer[0],
    }


def response_choices(con: duckdb.DuckDBPyConnection, run_id: int, limit: int = 100,
                     contains: str | None = None) -> list[dict[str, Any]]:
    """Responses of a run to pick from when the page was opened without a response id: the first `limit`
    (of those whose question id or provider holds `contains`, ignoring case), each with `total`, how many
    there are. Names longer than 200 characters keep their start and end, the question its first 80:
    a picker lists them, in full they are on the response's page."""
    def cut(column: str) -> str:
        return (f"CASE WHEN length({column}) > 200 THEN left({column}, 150) || '…' || right({column}, 49) "
                f"ELSE {column} END")

    where = "r.run_id = $run_id"
    params: dict[str, Any] = {"run_id": run_id}
    if contains:
        where += (" AND (contains(lower(r.question_id), lower($contains))"
                  " OR contains(lower(r.provider), lower($contains)))")
        params["contains"] = contains
    # The page's ids first, then the names of those ids only, each id bound (a PostgreSQL store finds them
    # by its index instead of sending every response); the total in its own count, or the run's stored size
    # when nothing narrows it.
    run = fetch_one(con, "SELECT n_responses, first_response_id FROM runs WHERE run_id = $run_id", {"run_id": run_id})
    if run is None:
        return []
    total, first = int(run[0]), run[1]
    ids: list[int] = []
    if not contains and first is not None:
        # A run's ids are mostly one block from its first: the `limit` ids from there, when all are the
        # run's, are its first `limit` (read by the ids' index, not a sort of the whole run).
        ids = [row[0] for row in con.execute(
            f"SELECT r.response_id FROM responses r WHERE {where} AND r.response_id BETWEEN $first AND $last "
            "ORDER BY r.response_id", {**params, "first": first, "last": first + limit - 1}).fetchall()]
    if len(ids) < min(limit, total) or contains:
        if contains:
            total = int(fetch_one(con, f"SELECT count(*) FROM responses r WHERE {where}", params)[0])  # type: ignore[index]
        ids = [row[0] for row in con.execute(
            f"SELECT r.response_id FROM responses r WHERE {where} ORDER BY r.response_id LIMIT $limit",
            {**params, "limit": limit}).fetchall()]
    page = Params("page")
    rows = query_dicts(
        con,
        f"""SELECT r.response_id, {cut('r.question_id')} AS question_id, {cut('r.provider')} AS provider,
                   left(q.question, 80) AS question
            FROM responses r
            JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
            WHERE r.response_id IN ({page.among(ids)}) AND q.run_id = {page.bind(run_id)}
            ORDER BY r.response_id""",
        page.values,
    )
    return [{**row, "total": total} for row in rows]


def run_id(con: duckdb.DuckDBPyConnection, run_name: str) -> int | None:
    row = fetch_one(con, "SELECT run_id FROM runs WHERE name = $name", {"name": run_name})
    return None if row is None else int(row[0])
