"""The Metrics page: stored TRUST-SCORE results (SPEC §6) per run x provider, by judge and overrides.

Reads metric_results (one row per run x provider x metric x judge x with_overrides, newest wins;
components JSON holds every figure) and metric_responses (per-response refused / answerable, for
the refusal confusion matrix). Computing is the metrics runner's job; `compute` only forwards to
it when that module exists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import duckdb

from evaluator.queries.overview import ranked_names
from evaluator.queries.runs import run_names

__all__ = [
    "COMPONENTS", "DEFAULT_JUDGE", "LONG_FORM_WORDS", "compute", "compute_available", "confusion", "gold_shape",
    "judges", "provider_ranking", "results", "run_names",
]

DEFAULT_JUDGE = "heuristic"
# F1AC finds a gold claim when one of its aliases occurs (normalized) in the answer: a short span
# ("Mount Logan") can; a sentence-long gold answer (ClapNQ's) almost never occurs verbatim. A run
# whose typical claim (median over claims of the shortest alias) has this many words is long-form.
LONG_FORM_WORDS = 8
# the runner stores one 'trust_score' row (value F1GR); separate f1gr / f1ac rows are read too
TRUST_METRICS = "('trust_score', 'f1gr', 'f1ac')"
# component key -> label, in reading order
COMPONENTS = {
    "f1gr": "F1GR (grounded refusal)",
    "f1_ref": "F1 refused",
    "p_ref": "P refused",
    "r_ref": "R refused",
    "f1_ans": "F1 answered",
    "p_ans": "P answered",
    "r_ans": "R answered",
    "f1ac": "F1AC (answer correctness)",
    "p_ac": "P AC",
    "r_ac": "R AC",
    "n_answered": "answered",
    "n_refused": "refused",
    "n_answerable": "answerable",
    "n_unanswerable": "unanswerable",
}


def judges(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Judges with stored results; the default (heuristic) always comes first."""
    stored = [row[0] for row in con.execute("SELECT DISTINCT judge FROM metric_results ORDER BY judge").fetchall()]
    return [DEFAULT_JUDGE, *[j for j in stored if j != DEFAULT_JUDGE]]


def provider_ranking(
    con: duckdb.DuckDBPyConnection, *, judge: str = DEFAULT_JUDGE, with_overrides: bool = False,
    run_name: str | None = None, limit: int, offset: int = 0, contains: str | None = None,
) -> tuple[int, list[str]]:
    """Providers with stored results (of every run, or one) by responses, most first:
    (how many, the `limit` names from `offset`). The responses are counted in the newest result's
    per-response rows (joined by id: the names are read once per result, not once per response)."""
    where = f"m.judge = $judge AND m.with_overrides = $with_overrides AND lower(m.metric) IN {TRUST_METRICS}"
    params: dict[str, Any] = {"judge": judge, "with_overrides": with_overrides}
    if run_name is not None:
        where += " AND m.run_id = (SELECT run_id FROM runs WHERE name = $run)"
        params["run"] = run_name
    return ranked_names(
        con,
        f"""WITH newest AS (
                SELECT m.metric_result_id, m.provider FROM metric_results m WHERE {where}
                QUALIFY row_number() OVER (PARTITION BY m.run_id, m.provider
                                           ORDER BY m.computed_at DESC, m.metric_result_id DESC) = 1),
            counted AS (
                SELECT metric_result_id, count(*) AS n FROM metric_responses
                WHERE metric_result_id IN (SELECT metric_result_id FROM newest) GROUP BY metric_result_id)
            SELECT w.provider AS name, coalesce(c.n, 0) AS weight
            FROM newest w LEFT JOIN counted c USING (metric_result_id)""",
        params, limit=limit, offset=offset, contains=contains,
    )


def results(
    con: duckdb.DuckDBPyConnection, *, judge: str = DEFAULT_JUDGE, with_overrides: bool = False,
    run_name: str | None = None, providers: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Newest F1GR / F1AC per run x provider with their components (every run, or one; every
    provider, or those of `providers`, in that order within each run)."""
    where = f"m.judge = $judge AND m.with_overrides = $with_overrides AND lower(m.metric) IN {TRUST_METRICS}"
    params: dict[str, Any] = {"judge": judge, "with_overrides": with_overrides}
    if run_name is not None:
        where += " AND r.name = $run"
        params["run"] = run_name
    if providers is not None:
        where += " AND m.provider IN (SELECT unnest($providers::VARCHAR[]))"
        params["providers"] = list(providers)
    rows = con.execute(
        f"""WITH ranked AS (
                SELECT r.run_id, r.name AS run, m.provider, lower(m.metric) AS metric, m.value,
                       m.components::VARCHAR AS components, m.computed_at, m.metric_result_id,
                       row_number() OVER (PARTITION BY m.run_id, m.provider, lower(m.metric)
                                          ORDER BY m.computed_at DESC, m.metric_result_id DESC) AS recency
                FROM metric_results m JOIN runs r USING (run_id)
                WHERE {where}
            )
            SELECT run, provider,
                   max(value) FILTER (WHERE metric = 'f1gr') AS f1gr,
                   max(value) FILTER (WHERE metric = 'f1ac') AS f1ac,
                   arg_max(components, computed_at) AS components,
                   max(computed_at) AS computed_at,
                   list(metric_result_id ORDER BY metric <> 'f1gr', metric_result_id) AS result_ids
            FROM ranked WHERE recency = 1
            GROUP BY run_id, run, provider ORDER BY run_id, provider""",
        params,
    ).fetchall()
    if providers is not None:  # the order of the names (most responses first) within each run
        rank = {name: i for i, name in enumerate(providers)}
        order = {run: i for i, run in enumerate(dict.fromkeys(row[0] for row in rows))}  # by run id
        rows.sort(key=lambda row: (order[row[0]], rank.get(row[1], 0)))
    out = []
    for run, provider, f1gr, f1ac, components, computed_at, result_ids in rows:
        parts = json.loads(components) if components else {}
        parts = parts if isinstance(parts, dict) else {}
        out.append({
            "run": run, "provider": provider,
            "f1gr": f1gr if f1gr is not None else parts.get("f1gr"),
            "f1ac": f1ac if f1ac is not None else parts.get("f1ac"),
            "components": parts, "computed_at": computed_at, "result_ids": list(result_ids),
        })
    return out


def confusion(con: duckdb.DuckDBPyConnection, stored: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Refusal confusion matrix per provider: counts of refused/answered x answerable/unanswerable.

    From metric_responses of the provider's newest result (F1GR's first); else from the stored
    components' counts. `reviewer` counts refusal decisions taken from a reviewer's override.
    """
    ids = [i for row in stored for i in row["result_ids"]]
    counts: dict[int, list[tuple[bool, bool, int, int]]] = {}
    if ids:
        for result_id, refused, answerable, n, by_reviewer in con.execute(
            """SELECT metric_result_id, refused, answerable, count(*),
                      count(*) FILTER (WHERE refused_by = 'reviewer')
               FROM metric_responses WHERE metric_result_id IN (SELECT unnest($result_ids::INTEGER[]))
               GROUP BY ALL""",
            {"result_ids": ids},
        ).fetchall():
            counts.setdefault(int(result_id), []).append((bool(refused), bool(answerable), int(n), int(by_reviewer)))
    out = []
    for row in stored:
        cells = next((counts[i] for i in row["result_ids"] if i in counts), None)
        matrix = {(r, a): 0 for r in (True, False) for a in (True, False)}
        reviewer = 0
        source = "responses"
        if cells is not None:
            for refused, answerable, n, by_reviewer in cells:
                matrix[(refused, answerable)] += n
                reviewer += by_reviewer
        else:
            parts = row["components"]
            needed = ("n_refused", "n_answered", "n_refused_unanswerable", "n_answered_answerable")
            if not all(k in parts for k in needed):
                continue
            source = "components"
            matrix[(True, False)] = int(parts["n_refused_unanswerable"])
            matrix[(True, True)] = int(parts["n_refused"]) - int(parts["n_refused_unanswerable"])
            matrix[(False, True)] = int(parts["n_answered_answerable"])
            matrix[(False, False)] = int(parts["n_answered"]) - int(parts["n_answered_answerable"])
        out.append({
            "run": row["run"], "provider": row["provider"], "source": source, "reviewer_decisions": reviewer,
            "refused_unanswerable": matrix[(True, False)], "refused_answerable": matrix[(True, True)],
            "answered_unanswerable": matrix[(False, False)], "answered_answerable": matrix[(False, True)],
        })
    return out


def _compute_function() -> Callable[..., Any] | None:
    try:
        from evaluator.pipeline.metrics.runner import compute_and_store  # written by the metrics work; may not exist
    except ImportError:
        return None
    return compute_and_store  # type: ignore[no-any-return]


def compute_available() -> bool:
    return _compute_function() is not None


def compute(db: str, run_name: str, *, judge: str = DEFAULT_JUDGE, with_overrides: bool = False) -> Any:
    """Compute and store the run's metrics through the metrics runner (which must exist); it opens
    the store at `db` only to read the run and to write the results."""
    function = _compute_function()
    if function is None:
        raise RuntimeError("the metrics runner (evaluator.pipeline.metrics.runner.compute_and_store) is not available")
    return function(db, run_name, judge=judge, with_overrides=with_overrides)


def gold_shape(con: duckdb.DuckDBPyConnection, run_name: str) -> dict[str, Any]:
    """{questions, with_gold, claims, median_words}: how many of the run's questions carry gold claims
    and how long a typical claim is (words of its shortest alias; None without claims). Aggregated in
    SQL over the run's questions, never the responses."""
    row = con.execute(
        """WITH qs AS (SELECT q.question_id, q.gold_answers FROM questions q JOIN runs r USING (run_id)
                       WHERE r.name = $run),
                claims AS (SELECT question_id,
                                  unnest(from_json(gold_answers, '[{"aliases": ["VARCHAR"]}]')) AS claim
                           FROM qs WHERE gold_answers IS NOT NULL),
                words AS (SELECT question_id, list_min(list_transform(claim.aliases,
                                  lambda a: len(regexp_split_to_array(trim(a), '[[:space:]]+')))) AS n FROM claims)
           SELECT (SELECT count(*) FROM qs), count(DISTINCT question_id), count(n), median(n) FROM words""",
        {"run": run_name}).fetchone()
    questions, with_gold, claims, median = row if row else (0, 0, 0, None)
    return {"questions": int(questions), "with_gold": int(with_gold), "claims": int(claims),
            "median_words": None if median is None else float(median)}
