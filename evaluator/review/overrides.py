"""Reviewer overrides: append-only verdict corrections, their history, carry-forward and agreement.

An override never edits or deletes anything: it is one more row (who, when, old and new
value, reason, the evaluation it was made against). The effective verdict is the latest
override of a target, else the computed verdict (evaluator.queries.effective).

Targets: 'overall', a check name, or 'refused' (the reviewer's call on whether the answer
is a refusal, which the TRUST-SCORE metrics use instead of the judge's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from evaluator.core.types import CHECK_NAMES
from evaluator.queries.effective import LATEST_OVERRIDES, check_results_cte, response_results_cte
from evaluator.review.config import ReviewConfig, load_review_config
from evaluator.store.db import fetch_one, fetch_value, next_id, save_once
from evaluator.store.run_lookup import run_id_for

VERDICTS = ("PASS", "FAIL", "N/A")
OVERALL_VALUES = ("PASS", "FAIL")
REFUSED_VALUES = ("REFUSED", "NOT REFUSED")


class OverrideError(ValueError):
    """An override that cannot be written as asked; the message says what to fix. Nothing is written."""


def allowed_values(target: str) -> tuple[str, ...]:
    if target == "overall":
        return OVERALL_VALUES
    if target == "refused":
        return REFUSED_VALUES
    return VERDICTS


def targets_for(con: duckdb.DuckDBPyConnection, response_id: int, *, applicable_only: bool = False) -> list[str]:
    """'overall', the six checks, any extra check recorded for this response, and 'refused'.

    applicable_only: without the checks the run's bot profile does not apply (always N/A there,
    "not applicable to this bot"), for choices offered to a reviewer."""
    extra = [row[0] for row in con.execute(
        "SELECT DISTINCT check_name FROM check_results WHERE response_id = $response ORDER BY check_name",
        {"response": response_id},
    ).fetchall() if row[0] not in CHECK_NAMES]
    checks = list(CHECK_NAMES)
    if applicable_only:
        applied = profile_checks(con, response_id)
        checks = [c for c in checks if applied is None or c in applied]
    return ["overall", *checks, *extra, "refused"]


def profile_checks(con: duckdb.DuckDBPyConnection, response_id: int) -> tuple[str, ...] | None:
    """The checks the profile of the response's run applies, by the rules of the run's latest computed
    evaluation (else the built-in rules); None when the run's profile is unknown to them."""
    from evaluator.rules.load import load_rules, rules_from_text

    row = fetch_one(
        con,
        """SELECT coalesce(e.profile, run.profile), e.rules_text, e.rules_source
           FROM responses r JOIN runs run ON run.run_id = r.run_id
           LEFT JOIN evaluations e ON e.run_id = r.run_id AND e.rules_text IS NOT NULL
           WHERE r.response_id = $response
           ORDER BY e.evaluation_id DESC NULLS LAST LIMIT 1""",
        {"response": response_id},
    )
    if row is None or row[0] is None:
        return None
    profile, text, source = row
    try:
        rules = rules_from_text(text, source or "<stored>") if text else load_rules(None)
        return tuple(rules.profile(str(profile)).checks)
    except ValueError:  # stored rules of an older schema, or a profile they do not define
        return None


@dataclass(frozen=True)
class OverrideSpec:
    """One override of a bulk save: a target of a response and its new value."""

    response_id: int
    target: str
    new_value: str


def _checked(con: duckdb.DuckDBPyConnection, response_id: int, target: str, new_value: str,
             evaluation_id: int | None) -> str:
    """The new value, normalised; raise OverrideError when the target or value is wrong."""
    new_value = (new_value or "").strip().upper()
    run_id = fetch_value(con, "SELECT run_id FROM responses WHERE response_id = $response",
                         {"response": response_id})
    if run_id is None:
        raise OverrideError(f"no response with id {response_id}")
    if target not in targets_for(con, response_id):
        raise OverrideError(f"cannot override {target!r}; use 'overall', a check name or 'refused'")
    if new_value not in allowed_values(target):
        raise OverrideError(f"{target} cannot be set to {new_value!r}; use one of {', '.join(allowed_values(target))}")
    if evaluation_id is not None and fetch_value(
        con, "SELECT run_id FROM evaluations WHERE evaluation_id = $evaluation", {"evaluation": evaluation_id}
    ) != run_id:
        raise OverrideError(f"evaluation {evaluation_id} is not an evaluation of this response's run")
    return new_value


def _who_and_why(reason: str, reviewer: str, config: ReviewConfig) -> tuple[str, str]:
    reason, reviewer = (reason or "").strip(), (reviewer or "").strip()
    if not reviewer:
        raise OverrideError("an override needs a reviewer: say who you are first")
    if not config.may_override(reviewer):
        raise OverrideError(f"{reviewer!r} is not on the reviewers list; overrides are read-only for them")
    if not reason:
        raise OverrideError("an override needs a reason: say why the verdict is wrong")
    return reason, reviewer


def add_override(
    con: duckdb.DuckDBPyConnection,
    response_id: int,
    target: str,
    new_value: str,
    reason: str,
    reviewer: str,
    evaluation_id: int | None = None,
    carried_from: int | None = None,
    *,
    config: ReviewConfig | None = None,
    client_token: str | None = None,
) -> int:
    """Append one override and return its id; raise OverrideError (writing nothing) when invalid.

    `client_token` names one press of Save: a save that is retried (evaluator.review.pending) with the
    same token returns the override written the first time instead of writing it again."""
    reason, reviewer = _who_and_why(reason, reviewer, config or load_review_config())
    new_value = _checked(con, response_id, target, new_value, evaluation_id)
    if carried_from is not None and fetch_value(
        con, "SELECT count(*) FROM overrides WHERE override_id = $carried_from", {"carried_from": carried_from}
    ) == 0:
        raise OverrideError(f"no override with id {carried_from} to carry forward")
    spec = OverrideSpec(response_id, target, new_value)
    return _write(con, [spec], reason, reviewer, evaluation_id, carried_from, client_token)[0]


def add_overrides(
    con: duckdb.DuckDBPyConnection,
    overrides: list[OverrideSpec],
    reason: str,
    reviewer: str,
    evaluation_id: int | None = None,
    *,
    config: ReviewConfig | None = None,
    client_token: str | None = None,
) -> list[int]:
    """Append many overrides with one reason in ONE transaction (all or none) and return their ids.

    Every override carries `client_token`: a retried bulk save returns the ids written the first
    time. Raises OverrideError, writing nothing, when any of them is invalid."""
    if not overrides:
        raise OverrideError("a bulk override needs at least one response")
    reason, reviewer = _who_and_why(reason, reviewer, config or load_review_config())
    checked = [OverrideSpec(o.response_id, o.target, _checked(con, o.response_id, o.target, o.new_value,
                                                              evaluation_id)) for o in overrides]
    return _write(con, checked, reason, reviewer, evaluation_id, None, client_token)


def _write(con: duckdb.DuckDBPyConnection, overrides: list[OverrideSpec], reason: str, reviewer: str,
           evaluation_id: int | None, carried_from: int | None, client_token: str | None) -> list[int]:
    """Insert checked overrides in one transaction, each old_value read inside it (exactly once per token)."""

    def written() -> list[int]:
        return [int(row[0]) for row in con.execute("SELECT override_id FROM overrides WHERE client_token = $token "
                                                   "ORDER BY override_id", {"token": client_token}).fetchall()]

    def write() -> list[int]:
        ids = []
        for spec in overrides:
            old_value = current_value(con, spec.response_id, spec.target, evaluation_id)
            override_id = next_id(con, "override_ids")
            con.execute(
                """INSERT INTO overrides (override_id, response_id, evaluation_id, target, old_value,
                                          new_value, reason, reviewer, created_at, carried_from,
                                          client_token)
                   VALUES ($id, $response, $evaluation, $target, $old, $new, $reason, $reviewer, now(),
                           $carried_from, $token)""",
                {"id": override_id, "response": spec.response_id, "evaluation": evaluation_id,
                 "target": spec.target, "old": old_value, "new": spec.new_value, "reason": reason,
                 "reviewer": reviewer, "carried_from": carried_from, "token": client_token},
            )
            ids.append(override_id)
        return ids

    return save_once(con, client_token, written, write, serialize="overrides")


def current_value(con: duckdb.DuckDBPyConnection, response_id: int, target: str,
                  evaluation_id: int | None = None) -> str | None:
    """The effective value of a target before a new override: the latest override, else computed
    (in the given evaluation, else the run's latest); for 'refused', the latest judge decision."""
    latest = fetch_one(
        con,
        """SELECT new_value FROM overrides WHERE response_id = $response AND target = $target
           ORDER BY override_id DESC LIMIT 1""",
        {"response": response_id, "target": target},
    )
    if latest is not None:
        return str(latest[0])
    if target == "refused":
        refused = fetch_value(
            con,
            """SELECT mr.refused FROM metric_responses mr JOIN metric_results m USING (metric_result_id)
               WHERE mr.response_id = $response AND mr.refused IS NOT NULL
               ORDER BY m.computed_at DESC, m.metric_result_id DESC LIMIT 1""",
            {"response": response_id},
        )
        return None if refused is None else REFUSED_VALUES[0] if refused else REFUSED_VALUES[1]
    if evaluation_id is None:
        evaluation_id = fetch_value(  # type: ignore[assignment]
            con,
            """SELECT max(e.evaluation_id) FROM evaluations e JOIN responses r USING (run_id)
               WHERE r.response_id = $response""",
            {"response": response_id},
        )
        if evaluation_id is None:
            return None
    if target == "overall":
        value = fetch_value(
            con, f"WITH {response_results_cte(True, '$evaluation')} SELECT overall FROM eff "
                 "WHERE response_id = $response",
            {"evaluation": evaluation_id, "response": response_id},
        )
    else:
        value = fetch_value(
            con, f"WITH {check_results_cte(True, '$evaluation')} SELECT verdict FROM eff_checks "
                 "WHERE response_id = $response AND check_name = $target",
            {"evaluation": evaluation_id, "response": response_id, "target": target},
        )
    return None if value is None else str(value)


HISTORY_COLUMNS = ["override_id", "created_at", "reviewer", "target", "old_value", "new_value", "reason",
                   "evaluation_id", "ruleset", "carried_from", "carried_from_run"]


def history(con: duckdb.DuckDBPyConnection, response_id: int) -> list[dict[str, Any]]:
    """Every override of a response, oldest first (nothing is ever removed)."""
    rows = con.execute(
        """SELECT o.override_id, o.created_at, o.reviewer, o.target, o.old_value, o.new_value, o.reason,
                  o.evaluation_id, e.ruleset, o.carried_from, src_run.name
           FROM overrides o
           LEFT JOIN evaluations e ON e.evaluation_id = o.evaluation_id
           LEFT JOIN overrides src ON src.override_id = o.carried_from
           LEFT JOIN responses src_resp ON src_resp.response_id = src.response_id
           LEFT JOIN runs src_run ON src_run.run_id = src_resp.run_id
           WHERE o.response_id = $response
           ORDER BY o.created_at, o.override_id""",
        {"response": response_id},
    ).fetchall()
    return [dict(zip(HISTORY_COLUMNS, row, strict=True)) for row in rows]


# Overrides made on the same answer (question_id + provider + answer_hash) in an earlier run,
# latest per target, for targets this response has no override of its own yet. The response's
# values are bound ($response_id, $question_id, $provider, $answer_hash, $run_id), not joined:
# filters on bound values reach the scans (a PostgreSQL store sends the matches, not every response).
CARRIED_SQL = """
SELECT o.override_id, o.target, o.new_value, o.reason, o.reviewer, o.created_at,
       src.run_id AS source_run_id, src.response_id AS source_response_id
FROM responses src
JOIN overrides o ON o.response_id = src.response_id
WHERE src.question_id = $question_id AND src.provider = $provider AND src.answer_hash = $answer_hash
  AND src.run_id < $run_id
  AND NOT EXISTS (SELECT 1 FROM overrides mine WHERE mine.response_id = $response_id AND mine.target = o.target)
QUALIFY row_number() OVER (PARTITION BY o.target ORDER BY o.override_id DESC) = 1
"""

# Triage: does response `r` have anything to carry forward? (CARRIED_SQL's rows exist; no window needed)
HAS_CARRIED_SQL = """EXISTS (
    SELECT 1 FROM responses src JOIN overrides o ON o.response_id = src.response_id
    WHERE src.question_id = r.question_id AND src.provider = r.provider AND src.answer_hash = r.answer_hash
      AND src.run_id < r.run_id
      AND NOT EXISTS (SELECT 1 FROM overrides mine
                      WHERE mine.response_id = r.response_id AND mine.target = o.target))"""

CANDIDATE_COLUMNS = ["override_id", "target", "new_value", "reason", "reviewer", "created_at",
                     "source_run", "source_response_id"]


def carried_candidates(con: duckdb.DuckDBPyConnection, response_id: int) -> list[dict[str, Any]]:
    """Overrides of the same answer in earlier runs that could be applied here ("carried from run X")."""
    answer = fetch_one(con, "SELECT response_id, question_id, provider, answer_hash, run_id FROM responses "
                            "WHERE response_id = $response", {"response": response_id})
    if answer is None:
        return []
    rows = con.execute(
        f"""SELECT c.override_id, c.target, c.new_value, c.reason, c.reviewer, c.created_at, run.name,
                   c.source_response_id
            FROM ({CARRIED_SQL}) c
            JOIN runs run ON run.run_id = c.source_run_id
            ORDER BY c.target""",
        dict(zip(("response_id", "question_id", "provider", "answer_hash", "run_id"), answer, strict=True)),
    ).fetchall()
    return [dict(zip(CANDIDATE_COLUMNS, row, strict=True)) for row in rows]


def apply_carried(
    con: duckdb.DuckDBPyConnection, response_id: int, carried_from: int, reviewer: str,
    evaluation_id: int | None = None, *, config: ReviewConfig | None = None, client_token: str | None = None,
) -> int:
    """Write the carried override on this response, marked with the override it came from."""
    candidate = next((c for c in carried_candidates(con, response_id) if c["override_id"] == carried_from), None)
    if candidate is None:
        raise OverrideError(f"override {carried_from} is not on offer for response {response_id}")
    return add_override(
        con, response_id, candidate["target"], candidate["new_value"],
        f"carried from run {candidate['source_run']}: {candidate['reason']}", reviewer,
        evaluation_id=evaluation_id, carried_from=carried_from, config=config, client_token=client_token,
    )


AGREEMENT_COLUMNS = ["check", "template", "reviewed", "fail_reviewed", "fail_overturned", "false_failure_rate",
                     "pass_reviewed", "pass_overturned", "false_pass_rate"]


def agreement(con: duckdb.DuckDBPyConnection, run: str, evaluation_id: int | None = None) -> list[dict[str, Any]]:
    """Per check (and 'overall') and template: how often reviewers overturned the computed verdict.

    A computed verdict counts as reviewed when its target has an override; the latest one is
    the reviewer's verdict. false-failure rate = computed FAIL overturned (to PASS, or to N/A
    for a check) / computed FAIL reviewed; false-pass rate = PASS→FAIL / computed PASS
    reviewed (None when nothing was reviewed). Confirming overrides count as reviewed.
    """
    run_id = run_id_for(con, run)
    if evaluation_id is None:
        evaluation_id = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run",  # type: ignore[assignment]
                                    {"run": run_id})
        if evaluation_id is None:
            return []
    elif fetch_value(con, "SELECT run_id FROM evaluations WHERE evaluation_id = $evaluation",
                     {"evaluation": evaluation_id}) != run_id:
        raise OverrideError(f"evaluation {evaluation_id} is not an evaluation of run {run!r}")
    rows = con.execute(
        f"""WITH {LATEST_OVERRIDES},
            computed AS (
                SELECT response_id, check_name AS target, verdict FROM check_results WHERE evaluation_id = $evaluation
                UNION ALL
                SELECT response_id, 'overall', overall FROM response_results WHERE evaluation_id = $evaluation
            ),
            reviewed AS (
                SELECT c.target, rr.template_group, c.verdict AS computed, o.new_value AS reviewed
                FROM computed c
                JOIN latest_overrides o ON o.response_id = c.response_id AND o.target = c.target
                JOIN response_results rr ON rr.response_id = c.response_id AND rr.evaluation_id = $evaluation
            )
            SELECT target, template_group, count(*),
                   count(*) FILTER (WHERE computed = 'FAIL') AS fail_reviewed,
                   count(*) FILTER (WHERE computed = 'FAIL' AND reviewed <> 'FAIL') AS fail_overturned,
                   fail_overturned / nullif(fail_reviewed, 0),
                   count(*) FILTER (WHERE computed = 'PASS') AS pass_reviewed,
                   count(*) FILTER (WHERE computed = 'PASS' AND reviewed = 'FAIL') AS pass_overturned,
                   pass_overturned / nullif(pass_reviewed, 0)
            FROM reviewed
            GROUP BY target, template_group
            ORDER BY CASE WHEN target = 'overall' THEN 0 ELSE 1 END, target, template_group""",
        {"evaluation": evaluation_id},
    ).fetchall()
    return [dict(zip(AGREEMENT_COLUMNS, row, strict=True)) for row in rows]


# Every override of the run bound to $run, oldest first, with where each came from.
EXPORT_SQL = """
SELECT o.override_id, run.name AS run, r.question_id, r.provider, o.response_id, o.evaluation_id,
       e.ruleset, o.target, o.old_value, o.new_value, o.reason, o.reviewer, o.created_at, o.carried_from,
       src_run.name AS carried_from_run
FROM overrides o
JOIN responses r ON r.response_id = o.response_id
JOIN runs run ON run.run_id = r.run_id
LEFT JOIN evaluations e ON e.evaluation_id = o.evaluation_id
LEFT JOIN overrides src ON src.override_id = o.carried_from
LEFT JOIN responses src_resp ON src_resp.response_id = src.response_id
LEFT JOIN runs src_run ON src_run.run_id = src_resp.run_id
WHERE r.run_id = $run
ORDER BY o.created_at, o.override_id
"""
