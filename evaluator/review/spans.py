"""The highlight spans a page shows for responses: stored by the evaluation, or, for one that
stored verdicts only (a huge run, the SQL engine), evaluated again for just those responses (a
judge's flag, ``llm_unsupported_span``, is always stored: it cannot be evaluated again)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import orjson

from evaluator.core.evaluate import evaluate
from evaluator.core.registry import FLAG
from evaluator.core.support import closest, sentences, share_held
from evaluator.core.types import CheckResult, FlagResult
from evaluator.pipeline.judges.llm_spans import JUDGE_FLAGS, SPAN_FLAG
from evaluator.pipeline.responses import load_responses
from evaluator.queries.review import span_evaluation
from evaluator.rules.load import load_rules, rules_from_text
from evaluator.store.sql_params import Params


def of(con: duckdb.DuckDBPyConnection, evaluation_id: int, response_ids: Sequence[int]
       ) -> dict[int, list[dict[str, Any]]]:
    """Highlight spans per response: every check's and flag's spans ({start, end, text, kind})."""
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    source = span_evaluation(con, evaluation_id)
    if source is None or not response_ids:
        return out
    computed = source["with_spans"] is False and source["rules_text"]
    if computed:
        out = _computed_spans(con, source, response_ids)
    # with computed spans, only a judge's flags' (llm_unsupported_span): the rules' are evaluated again
    ids = Params("id")
    among = ids.among(response_ids)
    rows = con.execute(
        f"""SELECT response_id, spans FROM check_results
           WHERE evaluation_id = $evaluation_id AND response_id IN ({among})
             AND spans IS NOT NULL AND NOT $computed
           UNION ALL
           SELECT response_id, spans FROM flags
           WHERE evaluation_id = $evaluation_id AND response_id IN ({among})
             AND spans IS NOT NULL AND (NOT $computed OR list_contains($judge_flags::VARCHAR[], flag))""",
        {"evaluation_id": source["evaluation_id"], "computed": bool(computed), "judge_flags": list(JUDGE_FLAGS),
         **ids.values},
    ).fetchall()
    for response_id, raw in rows:
        out[int(response_id)].extend(orjson.loads(raw) or [])
    return out


def _computed_spans(con: duckdb.DuckDBPyConnection, source: dict[str, Any], response_ids: Sequence[int]
                    ) -> dict[int, list[dict[str, Any]]]:
    """Spans of an evaluation that stored verdicts only (a huge run): evaluate again, for display."""
    rules = rules_from_text(source["rules_text"], source["rules_source"])
    out: dict[int, list[dict[str, Any]]] = {}
    loaded = load_responses(con, response_ids)  # one read for the page, not one per response
    for response_id in response_ids:
        resp = loaded.get(int(response_id))
        found: list[dict[str, Any]] = []
        if resp is not None:
            result = evaluate(resp, ruleset=source["ruleset"], rules=rules, profile=source["profile"],
                              with_spans=True)
            items: list[CheckResult | FlagResult] = [*result.checks, *result.flags]
            for item in items:
                found.extend(s.as_dict() for s in item.spans)
        out[int(response_id)] = found
    return out


def of_flag(con: duckdb.DuckDBPyConnection, evaluation_id: int, flag: str, response_ids: Sequence[int]
            ) -> dict[int, list[tuple[int, int]]]:
    """Where ``flag`` is raised among ``response_ids``: its highlighted character intervals (an
    empty list when it is raised with no span). Stored spans when the evaluation kept them, else
    evaluated again for the responses it raised the flag on."""
    source = span_evaluation(con, evaluation_id)
    if source is None or not response_ids:
        return {}
    ids = Params("id")
    rows = con.execute(
        f"""SELECT response_id, spans FROM flags
           WHERE evaluation_id = $evaluation_id AND flag = $flag AND response_id IN ({ids.among(response_ids)})""",
        {"evaluation_id": source["evaluation_id"], "flag": flag, **ids.values}).fetchall()
    raised = {int(r): orjson.loads(raw) if raw is not None else None for r, raw in rows}
    if source["with_spans"] is False and source["rules_text"] and flag not in JUDGE_FLAGS:  # a judge's are stored
        rules = rules_from_text(source["rules_text"], source["rules_source"])
        loaded = load_responses(con, list(raised))
        out: dict[int, list[tuple[int, int]]] = {}
        for response_id in raised:
            result = evaluate(loaded[response_id], ruleset=source["ruleset"], rules=rules, profile=source["profile"],
                              with_spans=True)
            out[response_id] = [(s.start, s.end) for f in result.flags if f.flag == flag for s in f.spans]
        return out
    return {r: [(int(s["start"]), int(s["end"])) for s in spans or []] for r, spans in raised.items()}


def closest_in_context(con: duckdb.DuckDBPyConnection, evaluation_id: int, answer: str,
                       spans: Sequence[dict[str, Any]], retrieved: Sequence[dict[str, Any]]
                       ) -> list[dict[str, Any]]:
    """For each unsupported span of ``answer`` (the offline detector's or the LLM judge's), the
    retrieved sentence nearest the answer's sentence(s) holding it (evaluator.core.support.closest,
    words compared as the evaluation's rules compare them):
    {text, kind, item_id, sentence, share}; ``sentence`` None when no retrieved sentence shares a word."""
    unsupported = [s for s in spans if s.get("kind") in (FLAG.unsupported_claim, SPAN_FLAG)]
    if not unsupported:
        return []
    source = span_evaluation(con, evaluation_id)
    try:
        rules = (rules_from_text(source["rules_text"], source["rules_source"] or "<stored>")
                 if source and source["rules_text"] else load_rules())
    except ValueError:  # stored rules of an older schema: compare with the built-in options
        rules = load_rules()
    passages = [str(item.get("text") or "") for item in retrieved]
    bounds = sentences(answer)
    out = []
    for span in unsupported:
        start, end = int(span["start"]), int(span["end"])
        text = answer[start:end] if 0 <= start < end <= len(answer) else str(span.get("text") or "")
        # a few words (the judge's spans) are looked up by the sentence that holds them
        around = [(s, e) for s, e in bounds if s < end and start < e] if text == answer[start:end] else []
        claim = answer[around[0][0]:around[-1][1]] if around else text
        near = closest(claim, passages, rules.claim_support)
        sentence = None if near is None else passages[near.item][near.start:near.end]
        out.append({"text": text, "kind": span.get("kind"),
                    "item_id": None if near is None else str(retrieved[near.item].get("id", "")),
                    "sentence": sentence,
                    # of the span's own words (a judge's few words may all be missing from the sentence)
                    "share": None if sentence is None else share_held(text, sentence, rules.claim_support)})
    return out
