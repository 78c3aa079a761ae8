"""Store glue for the LLM span judge (issue 30 §3): ask it about a run's answers and store its
spans as the ``llm_unsupported_span`` flag of an evaluation, beside the rules' flags, so that
``evaluator agreement --spans --flag llm_unsupported_span`` scores it against people's marks.

Like ``metrics``: the store is held only to copy the run out (with the judge's cached replies) and
to write the results in one transaction; the judging reads the staging file. Responses with no
retrieved text (nothing to check the answer against) or an empty answer are not asked about.
Running it again replaces the flag's rows of that evaluation; cached replies cost nothing.

When the judge fails (the endpoint is down or answers HTTP 5xx, a reply is not the JSON asked
for, a timeout), no flag row is written or removed; the good replies received before the
failure are kept in the cache (the failing one is not), so the next run asks only for the rest.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator.core.errors import UsageError
from evaluator.pipeline.judges.base import (
    JudgeConfigError,
    JudgeError,
    JudgeReplyError,
    JudgeUnavailableError,
    preview,
)
from evaluator.pipeline.judges.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG, SPAN_SEVERITY, LLMSpanJudge, judgeable
from evaluator.pipeline.metrics.runner import CACHE_INSERT_SQL, StoreJudgeCache
from evaluator.pipeline.responses import RUN_ROWS_SQL, response_input, spans_json
from evaluator.store.db import StoreBusyError, arrow_reader, atomic, connect, fetch_value
from evaluator.store.results import write_flag_counts
from evaluator.store.run_lookup import run_id_for
from evaluator.store.staging import RunChangedError, require_same_run, run_version, snapshot_run, staging_area


class SpanJudgeError(JudgeError):
    """The span judge failed on one response; the message names it and what to fix."""


@dataclass(frozen=True)
class SpanJudgeResult:
    run: str
    evaluation_id: int  # the computed evaluation the flag was written to
    judge: str
    model: str
    judged: int  # responses the judge was asked about (or answered from the cache)
    skipped: int  # no retrieved text, or an empty answer
    flagged: int  # responses with at least one span
    spans: int
    unfound: int  # substrings the judge returned that the answer does not hold: dropped
    requests: int  # replies asked of the endpoint; the rest came from the cache


def judge_spans(db: str | os.PathLike[str] | None, run_name: str, evaluation_id: int | None = None, *,
                judge_options: dict[str, Any] | None = None,
                progress: Callable[[int], None] | None = None) -> SpanJudgeResult:
    """Ask the LLM span judge about every answer of the run that has retrieved text and store its
    spans as the ``llm_unsupported_span`` flag of ``evaluation_id`` (default, and for a recorded
    evaluation, whose flags are the computed one's: the run's latest computed evaluation)."""
    judge = LLMSpanJudge(**(judge_options or {}))  # its configuration is checked before the store is read
    with staging_area(db) as stage:
        with connect(db, read_only=True, upgrade=True) as con:  # read window
            run_id = run_id_for(con, run_name)
            target = _target_evaluation(con, run_id, run_name, evaluation_id)
            version = run_version(con, run_id)
            snapshot_run(con, run_id, stage, extra={"judge_cache": (
                "SELECT * FROM judge_cache WHERE judge = $judge", {"judge": LLMSpanJudge.name})})
        scon = stage.connect()
        try:
            cache = judge.cache = StoreJudgeCache(scon)
            rows = [row for batch in arrow_reader(scon.sql(RUN_ROWS_SQL, params={"run": run_id}), 20_000)
                    for row in batch.to_pylist()]
            found: list[dict[str, Any]] = []
            judged = skipped = unfound = 0
            for row in rows:
                resp = response_input(row)
                if not judgeable(resp.answer, resp.retrieved):
                    skipped += 1
                else:
                    try:
                        verdict = judge.spans(resp.question, resp.answer, resp.retrieved)
                    except JudgeError as exc:
                        kept = _keep_replies(db, cache.new)
                        raise SpanJudgeError(_failure(exc, row, run_name, judge, kept)) from exc
                    judged += 1
                    unfound += len(verdict.unfound)
                    if verdict.spans:
                        found.append({"response_id": int(row["response_id"]), "spans": spans_json(verdict.spans),
                                      "n": len(verdict.spans)})
                if progress is not None:
                    progress(1)
        finally:
            scon.close()
        with connect(db) as con, atomic(con):  # write window
            require_same_run(con, run_id, version, run_name, "while the span judge read it")
            if fetch_value(con, "SELECT count(*) FROM evaluations WHERE evaluation_id = $e", {"e": target}) == 0:
                raise RunChangedError(f"evaluation {target} was removed while the span judge ran; "
                                      "nothing was written: run the command again")
            if cache.new:
                con.executemany(CACHE_INSERT_SQL, cache.new)
            con.execute("DELETE FROM flags WHERE evaluation_id = $e AND flag = $flag", {"e": target, "flag": SPAN_FLAG})
            if found:
                con.executemany("INSERT INTO flags VALUES ($e, $response_id, $flag, $severity, $spans::JSON)",
                                [{"e": target, "flag": SPAN_FLAG, "severity": SPAN_SEVERITY,
                                  "response_id": f["response_id"], "spans": f["spans"]} for f in found])
            write_flag_counts(con, target, SPAN_FLAG)
    return SpanJudgeResult(run_name, target, judge.name, judge.model, judged, skipped, len(found),
                           sum(f["n"] for f in found), unfound, judge.requests)


def _target_evaluation(con: Any, run_id: int, run_name: str, evaluation_id: int | None) -> int:
    """The computed evaluation whose flags the judge's spans join: ``evaluation_id``, or the run's
    latest computed one (recorded verdicts carry no flags: theirs are the latest computed one's)."""
    if evaluation_id is not None:
        ruleset = fetch_value(con, "SELECT ruleset FROM evaluations WHERE evaluation_id = $e AND run_id = $run",
                              {"e": evaluation_id, "run": run_id})
        if ruleset is None:
            raise UsageError(f"--evaluation: {evaluation_id} is not an evaluation of run {run_name!r}")
        if ruleset != "recorded":
            return evaluation_id
    latest = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run "
                              "AND ruleset <> 'recorded'", {"run": run_id})
    if latest is None:
        raise UsageError(f"run {run_name!r} has no computed evaluation to add the judge's flag to: "
                         f"run evaluator recompute --run {shlex.quote(run_name)} --ruleset grounded first")
    return int(latest)


KEEP_WAIT_S = 10.0  # on the way out with an error: a busy store only costs the replies a second request


def _keep_replies(db: str | os.PathLike[str] | None, replies: list[dict[str, str]]) -> int:
    """Write the good replies received so far to the store's cache; how many were kept (0 when
    the store is busy: they are asked for again next time)."""
    if not replies:
        return 0
    with contextlib.suppress(StoreBusyError), connect(db, timeout_s=KEEP_WAIT_S) as con, atomic(con):
        con.executemany(CACHE_INSERT_SQL, replies)
        return len(replies)
    return 0


def _failure(exc: JudgeError, row: dict[str, Any], run_name: str, judge: LLMSpanJudge, kept: int) -> str:
    where = (f"response {row['response_id']} (question {preview(str(row['question_id']), 80, quote=True)}, "
             f"provider {preview(str(row['provider']), 80, quote=True)}) of run {run_name!r}")
    if isinstance(exc, JudgeUnavailableError):
        fix = (f"check {ENV_BASE_URL} ({judge.endpoint}) and that the server there is up"
               + (f", and {ENV_API_KEY}" if exc.status in (401, 403) else "")
               + (f", and {ENV_MODEL} ({judge.model})" if exc.status in (400, 404) else ""))
    elif isinstance(exc, JudgeReplyError):
        fix = (f"the model ({ENV_MODEL}={judge.model}) did not reply with the JSON asked for; that reply was "
               "not cached: run again, or use a model that follows the instructions")
    elif isinstance(exc, JudgeConfigError):
        fix = "fix the judge's configuration"
    else:
        fix = "see the message"
    kept_text = (f"; the {kept} good replies received before it are kept in the cache, so running again asks "
                 "only for the rest" if kept else "")
    return (f"the span judge failed on {where}: {exc}. To fix: {fix}. No flag was written or removed"
            f"{kept_text}")

