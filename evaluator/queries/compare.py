"""The Compare-runs page: two runs of the same golden set under one rule set.

Pairs are responses with the same question_id and provider in both runs. Pass rates (with 95%
Wilson intervals, and Newcombe's interval for their difference) use every response of each run;
McNemar's exact test uses the pairs: b = regressions (pass in A, fail in B), c = fixes (fail in
A, pass in B). Aggregates run in DuckDB; flip lists are paged in SQL.
"""

from __future__ import annotations

from typing import Any

import duckdb

from evaluator.queries import report
from evaluator.queries.effective import response_results_cte, response_results_params
from evaluator.queries.overview import (
    CHECK_ORDER,
    common_rulesets,
    evaluation_info,
    latest_evaluation,
    rulesets,
    run_names,
)
from evaluator.queries.report import query_dicts
from evaluator.stats import mcnemar_exact, newcombe_interval, wilson_interval

__all__ = [
    "ALL", "FLIP_KINDS", "common_rulesets", "default_against", "evaluation_info", "flip_summary", "flips",
    "latest_evaluation", "mcnemar", "pairing", "pass_rates", "rulesets", "run_names",
]

ALL = "(all)"
FLIP_KINDS = {"regressions": ("PASS", "FAIL"), "fixes": ("FAIL", "PASS")}
CHECK_LIST_SQL = "[" + ", ".join(f"'{c}'" for c in CHECK_ORDER) + "]"


def default_against(con: duckdb.DuckDBPyConnection, run_name: str) -> str | None:
    """The other run sharing the most question ids with this one (None when no other run exists)."""
    rows = con.execute(
        """WITH mine AS (SELECT q.question_id FROM questions q JOIN runs r USING (run_id) WHERE r.name = ?)
           SELECT r.name, count(m.question_id) AS shared
           FROM runs r JOIN questions q USING (run_id) LEFT JOIN mine m ON m.question_id = q.question_id
           WHERE r.name <> ? GROUP BY r.name, r.run_id ORDER BY shared DESC, r.run_id LIMIT 1""",
        [run_name, run_name],
    ).fetchall()
    return rows[0][0] if rows else None


def _pairs_cte(with_overrides: bool) -> str:
    """CTEs ending in `pairs` (question_id, provider, template, template_b, va, vb, same_answer,
    response_a, response_b). Parameters: _pairs_params(...)."""
    eff = response_results_cte(with_overrides)
    return f"""
        a AS (WITH {eff} SELECT * FROM eff),
        b AS (WITH {eff} SELECT * FROM eff),
        pa AS (SELECT r.question_id, r.provider, r.answer_hash, r.response_id, a.template_group, a.overall
               FROM a JOIN responses r ON r.response_id = a.response_id
               WHERE r.run_id = (SELECT run_id FROM evaluations WHERE evaluation_id = ?)),
        pb AS (SELECT r.question_id, r.provider, r.answer_hash, r.response_id, b.template_group, b.overall
               FROM b JOIN responses r ON r.response_id = b.response_id
               WHERE r.run_id = (SELECT run_id FROM evaluations WHERE evaluation_id = ?)),
        pairs AS (
            SELECT pa.question_id, pa.provider, pa.template_group AS template, pb.template_group AS template_b,
                   pa.overall AS va, pb.overall AS vb, pa.answer_hash = pb.answer_hash AS same_answer,
                   pa.response_id AS response_a, pb.response_id AS response_b
            FROM pa JOIN pb ON pb.question_id = pa.question_id AND pb.provider = pa.provider
        )"""


def _pairs_params(evaluation_a: int, evaluation_b: int, with_overrides: bool) -> list[int]:
    return [*response_results_params(evaluation_a, with_overrides), *response_results_params(evaluation_b, with_overrides),
            evaluation_a, evaluation_b]


def pairing(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> dict[str, int]:
    """How many responses pair up (same question_id + provider) and how many are in one run only."""
    rows = con.execute(
        """WITH ka AS (SELECT question_id, provider FROM responses
                       WHERE run_id = (SELECT run_id FROM evaluations WHERE evaluation_id = ?)),
                kb AS (SELECT question_id, provider FROM responses
                       WHERE run_id = (SELECT run_id FROM evaluations WHERE evaluation_id = ?))
           SELECT count(*) FILTER (WHERE ka.question_id IS NOT NULL AND kb.question_id IS NOT NULL),
                  count(*) FILTER (WHERE kb.question_id IS NULL),
                  count(*) FILTER (WHERE ka.question_id IS NULL)
           FROM ka FULL OUTER JOIN kb ON kb.question_id = ka.question_id AND kb.provider = ka.provider""",
        [evaluation_a, evaluation_b],
    ).fetchall()
    paired, only_a, only_b = rows[0]
    return {"paired": int(paired), "only_a": int(only_a), "only_b": int(only_b)}


def _rate(passed: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(passed, n)
    return {"n": n, "passed": passed, "rate": passed / n if n else None, "ci": [low, high] if n else None}


def pass_rates(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """Per provider x template (plus '(all)' rows): each run's pass rate with its 95% Wilson interval,
    and B - A with Newcombe's 95% interval. Every response of each run counts, paired or not."""
    counts: dict[tuple[str, str], dict[str, list[int]]] = {}
    for side, evaluation_id in (("a", evaluation_a), ("b", evaluation_b)):
        for row in report.pass_rates(con, evaluation_id, with_overrides=with_overrides):
            for key in ((row["provider"], row["template"]), (ALL, row["template"]), (row["provider"], ALL), (ALL, ALL)):
                cell = counts.setdefault(key, {"a": [0, 0], "b": [0, 0]})[side]
                cell[0] += int(row["passed"])
                cell[1] += int(row["n"])
    out = []
    for (provider, template), cell in counts.items():
        if provider != ALL and template == ALL:
            continue  # per-provider totals over templates add little beside the (all) rows
        (pa, na), (pb, nb) = cell["a"], cell["b"]
        a, b = _rate(pa, na), _rate(pb, nb)
        delta = b["rate"] - a["rate"] if na and nb else None
        out.append({"provider": provider, "template": template,
                    "n_a": na, "passed_a": pa, "rate_a": a["rate"], "ci_a": a["ci"],
                    "n_b": nb, "passed_b": pb, "rate_b": b["rate"], "ci_b": b["ci"],
                    "delta": delta, "delta_ci": list(newcombe_interval(pa, na, pb, nb) or []) or None})
    out.sort(key=lambda r: (r["provider"] == ALL, r["provider"], r["template"] == ALL, r["template"]))
    return out


def mcnemar(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False
) -> list[dict[str, Any]]:
    """Paired flips and McNemar's exact p over all pairs, per provider, per template (of run A) and both."""
    rows = query_dicts(
        con,
        f"""WITH {_pairs_cte(with_overrides)}
            SELECT CASE WHEN grouping(provider) = 1 THEN '{ALL}' ELSE provider END AS provider,
                   CASE WHEN grouping(template) = 1 THEN '{ALL}' ELSE template END AS template,
                   count(*) AS pairs,
                   count(*) FILTER (WHERE va = 'PASS' AND vb = 'PASS') AS both_pass,
                   count(*) FILTER (WHERE va = 'FAIL' AND vb = 'FAIL') AS both_fail,
                   count(*) FILTER (WHERE va = 'PASS' AND vb = 'FAIL') AS regressions,
                   count(*) FILTER (WHERE va = 'FAIL' AND vb = 'PASS') AS fixes,
                   count(*) FILTER (WHERE va <> vb AND same_answer) AS flips_same_answer
            FROM pairs
            GROUP BY GROUPING SETS ((), (provider), (template), (provider, template))
            ORDER BY grouping(provider) DESC, grouping(template) DESC, provider, template""",
        _pairs_params(evaluation_a, evaluation_b, with_overrides),
    )
    for row in rows:
        row["p_value"] = mcnemar_exact(int(row["regressions"]), int(row["fixes"]))
    return rows


def _rules_differ(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> bool:
    a, b = evaluation_info(con, evaluation_a) or {}, evaluation_info(con, evaluation_b) or {}
    return a.get("rules_hash") != b.get("rules_hash")


def flip_summary(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False
) -> dict[str, dict[str, int]]:
    """Regressions and fixes, each split into 'answer changed' and 'same answer'."""
    rows = con.execute(
        f"""WITH {_pairs_cte(with_overrides)}
            SELECT va, vb, count(*), count(*) FILTER (WHERE same_answer)
            FROM pairs WHERE va <> vb GROUP BY va, vb""",
        _pairs_params(evaluation_a, evaluation_b, with_overrides),
    ).fetchall()
    out = {kind: {"count": 0, "answer_changed": 0, "same_answer": 0} for kind in FLIP_KINDS}
    for va, vb, count, same in rows:
        for kind, (from_, to) in FLIP_KINDS.items():
            if (va, vb) == (from_, to):
                out[kind] = {"count": int(count), "answer_changed": int(count - same), "same_answer": int(same)}
    return out


def flips(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, kind: str, *,
    with_overrides: bool = False, limit: int = 50, offset: int = 0,
) -> tuple[int, list[dict[str, Any]]]:
    """One page of regressions (pass -> fail) or fixes (fail -> pass): (how many in all, rows).

    Each row says why it flipped: 'answer changed' (different answer_hash), or, for the same
    answer, 'rules changed' (the evaluations' rules differ), 'inputs changed' (routing, template
    or retrieved items differ) or 'verdicts differ' (same answer, rules and inputs).
    """
    if kind not in FLIP_KINDS:
        raise ValueError(f"kind must be one of {', '.join(FLIP_KINDS)}")
    from_, to = FLIP_KINDS[kind]
    params = _pairs_params(evaluation_a, evaluation_b, with_overrides)
    base = f"""WITH {_pairs_cte(with_overrides)},
        flipped AS (SELECT * FROM pairs WHERE va = ? AND vb = ?)"""
    total = int(con.execute(base + " SELECT count(*) FROM flipped", [*params, from_, to]).fetchall()[0][0])
    if total == 0 or limit <= 0:
        return total, []
    rules_differ = _rules_differ(con, evaluation_a, evaluation_b)
    rows = query_dicts(
        con,
        base + f""",
        page AS (SELECT * FROM flipped ORDER BY template, response_a LIMIT ? OFFSET ?),
        diff AS (
            SELECT pg.response_a,
                   string_agg(ca.check_name || ' ' || ca.verdict || ' → ' || cb.verdict, '; '
                              ORDER BY list_position({CHECK_LIST_SQL}, ca.check_name)) AS check_diff
            FROM page pg
            JOIN check_results ca ON ca.evaluation_id = ? AND ca.response_id = pg.response_a
            JOIN check_results cb ON cb.evaluation_id = ? AND cb.response_id = pg.response_b
                                 AND cb.check_name = ca.check_name
            WHERE ca.verdict <> cb.verdict
            GROUP BY pg.response_a
        ),
        retrieval AS (
            SELECT rt.response_id, list((rt.chunk_key, rt.score) ORDER BY rt.rank) AS items
            FROM retrieved rt
            WHERE rt.response_id IN (SELECT response_a FROM page UNION ALL SELECT response_b FROM page)
            GROUP BY rt.response_id
        )
        SELECT pg.question_id, pg.provider,
               CASE WHEN pg.template = pg.template_b THEN pg.template
                    ELSE pg.template || ' → ' || pg.template_b END AS template,
               q.question, pg.va AS verdict_a, pg.vb AS verdict_b,
               CASE WHEN NOT pg.same_answer THEN 'answer changed'
                    WHEN ? THEN 'same answer — only the rules changed'
                    WHEN ra.template IS DISTINCT FROM rb.template
                      OR ra.classification IS DISTINCT FROM rb.classification
                      OR xa.items IS DISTINCT FROM xb.items THEN 'same answer — routing or retrieval changed'
                    ELSE 'same answer, rules and inputs — verdicts differ' END AS cause,
               coalesce(d.check_diff, '(no check changed: a reviewer override decides)') AS check_diff,
               pg.response_a, pg.response_b
        FROM page pg
        JOIN responses ra ON ra.response_id = pg.response_a
        JOIN responses rb ON rb.response_id = pg.response_b
        JOIN questions q ON q.run_id = ra.run_id AND q.question_id = pg.question_id
        LEFT JOIN diff d ON d.response_a = pg.response_a
        LEFT JOIN retrieval xa ON xa.response_id = pg.response_a
        LEFT JOIN retrieval xb ON xb.response_id = pg.response_b
        ORDER BY pg.template, pg.response_a""",
        [*params, from_, to, limit, offset, evaluation_a, evaluation_b, rules_differ],
    )
    return total, rows

