"""``recompute --engine sql``: the run copied out (staging), evaluated by the SQL engine,
optionally verified against the Python reference, appended in one transaction."""

from __future__ import annotations

import os
import time

from evaluator.recompute import STAGED_EVALUATION_ID, RecomputeResult
from evaluator.rules import Rules
from evaluator.run_lookup import run_id_for
from evaluator.sql.engine import evaluate_run_sql, verify, write_sql_evaluation
from evaluator.staging import RunChangedError, attached, copy_back, snapshot_run, staging_area
from evaluator.store import atomic, connect, fetch_one, next_id


def recompute_sql(db: str | os.PathLike[str] | None, run_name: str, ruleset: str, *, rules: Rules,
                  profile: str | None = None, verify_n: int = 0) -> RecomputeResult:
    """Evaluate run ``run_id`` with the SQL engine; with ``verify_n``, re-evaluate that many random
    responses in Python first and write nothing on a difference (VerifyError)."""
    with staging_area(db) as stage:
        with connect(db, read_only=True, upgrade=True) as con:
            run_id = run_id_for(con, run_name)
            row = fetch_one(con, "SELECT content_hash, profile FROM runs WHERE run_id = $run", {"run": run_id})
            assert row is not None
            content_hash, profile = row[0], profile or str(row[1])
            rules.profile(profile)  # an unknown profile fails before any work
            snapshot_run(con, run_id, stage)
        started = time.perf_counter()
        scon = stage.connect()
        try:
            result = evaluate_run_sql(scon, run_id, ruleset=ruleset, rules=rules, profile=profile)
            if verify_n > 0:
                verify(scon, result, verify_n, ruleset=ruleset, rules=rules, profile=profile)
            duration = write_sql_evaluation(scon, STAGED_EVALUATION_ID, run_id, result, ruleset=ruleset,
                                            rules=rules, profile=profile, started=started)
        finally:
            scon.close()
        with connect(db) as con, attached(con, stage, read_only=True) as alias, atomic(con):
            if fetch_one(con, "SELECT content_hash FROM runs WHERE run_id = $run", {"run": run_id}) != (content_hash,):
                raise RunChangedError(f"run {run_name!r} was replaced or removed while it was being evaluated; "
                                      "nothing was written: run the command again")
            evaluation_id = next_id(con, "evaluation_ids")
            for table in ("evaluations", "response_results", "check_results", "flags", "evaluation_counts"):
                copy_back(con, alias, table, "evaluation_id = $staged",
                          {"staged": STAGED_EVALUATION_ID, "evaluation": evaluation_id},
                          replace={"evaluation_id": "$evaluation"})
    return RecomputeResult(evaluation_id, run_name, ruleset, rules.hash, result.overall.num_rows, duration)
