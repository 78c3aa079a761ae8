"""The Compare-runs page: two runs of the same golden set under one rule set.

Pairs are responses with the same question_id and provider in both runs. Pass rates (with 95%
Wilson intervals, and Newcombe's interval for their difference) use every response of each run;
McNemar's exact test uses the pairs: b = regressions (pass in A, fail in B), c = fixes (fail in
A, pass in B). Aggregates run in DuckDB; flip lists are paged in SQL.
"""

from __future__ import annotations

import uuid
from typing import Any

import duckdb

from evaluator.core.stats import mcnemar_exact, newcombe_interval, wilson_interval
from evaluator.queries.overview import (
    CHECK_LIST_SQL,
    REVIEWS_CTE,
    SHOWN_NAMES,
    common_rulesets,
    evaluation_info,
    latest_evaluation,
    pass_rate_counts,
    provider_ranking,
    query_dicts,
    rulesets,
    run_names,
    shown_pairs_cte,
    verdicts_cte,
)
from evaluator.store.db import quote_ident

__all__ = [
    "ALL", "FLIP_KINDS", "RunComparison", "common_rulesets", "default_against", "evaluation_info", "flip_summary",
    "latest_evaluation", "pairing", "pass_rates", "provider_ranking", "rulesets", "run_names", "shared_questions",
    "answers",
]

ALL = "(all)"
FLIP_KINDS = ("regressions", "fixes")  # regressions: pass in A -> fail in B; fixes: fail -> pass


def default_against(con: duckdb.DuckDBPyConnection, run_name: str) -> str | None:
    """The other run sharing the most question ids with this one; None when no other run shares one
    (an unrelated run is never a default: its pass rates are not a before/after of these)."""
    rows = con.execute(
        """WITH mine AS (SELECT q.question_id FROM questions q JOIN runs r USING (run_id) WHERE r.name = $run)
           SELECT r.name, count(m.question_id) AS shared
           FROM runs r JOIN questions q USING (run_id) JOIN mine m ON m.question_id = q.question_id
           WHERE r.name <> $run GROUP BY r.name, r.run_id ORDER BY shared DESC, r.run_id LIMIT 1""",
        {"run": run_name},
    ).fetchall()
    return rows[0][0] if rows else None


def shared_questions(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> int:
    """How many question ids the two runs have in common."""
    return int(con.execute(
        """SELECT count(*) FROM questions qa JOIN questions qb USING (question_id)
           WHERE qa.run_id = (SELECT run_id FROM runs WHERE name = $a)
             AND qb.run_id = (SELECT run_id FROM runs WHERE name = $b)""",
        {"a": run_a, "b": run_b},
    ).fetchall()[0][0])


def answers(con: duckdb.DuckDBPyConnection, response_ids: list[int]) -> dict[int, str]:
    """response id -> answer, for the few responses a page compares side by side."""
    rows = con.execute("SELECT response_id, answer FROM responses WHERE response_id IN (SELECT unnest($ids))",
                       {"ids": [int(i) for i in response_ids]}).fetchall()
    return {int(rid): answer for rid, answer in rows}


def _pairs_cte(with_overrides: bool) -> str:
    """CTEs ending in `pairs` (question_id, provider, template, template_b, va, vb, same_answer,
    response_a, response_b); verdicts are booleans (PASS = true). Parameters: $a, $b (the evaluations' ids)."""
    return f"""{REVIEWS_CTE},
        {verdicts_cte('va', with_overrides, '$a')},
        {verdicts_cte('vb', with_overrides, '$b')},
        pa AS (SELECT r.question_id, r.provider, r.answer_hash, r.response_id, a.template_group, a.pass
               FROM va a JOIN responses r ON r.response_id = a.response_id),
        pb AS (SELECT r.question_id, r.provider, r.answer_hash, r.response_id, b.template_group, b.pass
               FROM vb b JOIN responses r ON r.response_id = b.response_id),
        pairs AS (
            SELECT pa.question_id, pa.provider, pa.template_group AS template, pb.template_group AS template_b,
                   pa.pass AS va, pb.pass AS vb, pa.answer_hash = pb.answer_hash AS same_answer,
                   pa.response_id AS response_a, pb.response_id AS response_b
            FROM pa JOIN pb ON pb.question_id = pa.question_id AND pb.provider = pa.provider
        )"""


def pairing(rates: list[dict[str, Any]], tests: list[dict[str, Any]]) -> dict[str, int]:
    """Paired responses (same question_id + provider) and responses in one run only, from the pass-rate
    and McNemar rows (question_id + provider is unique within a run, so no extra query is needed)."""
    total = next((r for r in rates if r["provider"] == ALL and r["template"] == ALL), None)
    overall = next((t for t in tests if t["provider"] == ALL and t["template"] == ALL), None)
    paired = int(overall["pairs"]) if overall else 0
    n_a = int(total["n_a"]) if total else 0
    n_b = int(total["n_b"]) if total else 0
    return {"paired": paired, "only_a": n_a - paired, "only_b": n_b - paired}


def _rate(passed: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(passed, n)
    return {"n": n, "passed": passed, "rate": passed / n if n else None, "ci": [low, high] if n else None}


def pass_rates(
    con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *, with_overrides: bool = False,
    providers: list[str] | None = None, rest: bool = False,
) -> list[dict[str, Any]]:
    """Per provider x template (plus '(all)' rows): each run's pass rate with its 95% Wilson interval,
    and B - A with Newcombe's 95% interval. Every response of each run counts, paired or not.

    With `providers`, only their rows besides the '(all)' ones (in that order), and with `rest` one
    more row per template summing the other providers (provider None)."""
    counts: dict[tuple[str | None, str], dict[str, list[int]]] = {}
    side_of = {evaluation_a: "a", evaluation_b: "b"}
    for row in pass_rate_counts(con, [evaluation_a, evaluation_b], with_overrides=with_overrides,
                                providers=providers, rest=providers is not None):
        side = side_of[row["evaluation_id"]]
        for key in ((row["provider"], row["template"]), (ALL, row["template"]), (row["provider"], ALL), (ALL, ALL)):
            tally = counts.setdefault(key, {"a": [0, 0], "b": [0, 0]})[side]
            tally[0] += int(row["passed"])
            tally[1] += int(row["n"])
    out = []
    for (provider, template), sides in counts.items():
        if provider != ALL and template == ALL:
            continue  # per-provider totals over templates add little beside the (all) rows
        if provider is None and not rest:
            continue
        (pa, na), (pb, nb) = sides["a"], sides["b"]
        a, b = _rate(pa, na), _rate(pb, nb)
        delta = b["rate"] - a["rate"] if na and nb else None
        out.append({"provider": provider, "template": template,
                    "n_a": na, "passed_a": pa, "rate_a": a["rate"], "ci_a": a["ci"],
                    "n_b": nb, "passed_b": pb, "rate_b": b["rate"], "ci_b": b["ci"],
                    "delta": delta, "delta_ci": list(newcombe_interval(pa, na, pb, nb) or []) or None})
    rank = {name: i for i, name in enumerate(providers or ())}

    def order(r: dict[str, Any]) -> tuple:
        provider = r["provider"]
        place = (provider is None, rank.get(provider, 0), "") if providers is not None else (False, 0, provider)
        return (provider == ALL, *place, r["template"] == ALL, r["template"])

    out.sort(key=order)
    return out


class RunComparison:
    """Two runs' evaluations paired by question_id + provider. The pairs are computed once (into a TEMP
    table of this connection, dropped on close); the McNemar table and the flip lists read from it.

        with RunComparison(con, a, b, with_overrides=False) as cmp:
            tests = cmp.mcnemar(); lists = cmp.flips(limit=25)
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *,
                 with_overrides: bool = False) -> None:
        self.con, self.a, self.b = con, int(evaluation_a), int(evaluation_b)
        self.table = quote_ident(f"pm_compare_{uuid.uuid4().hex[:12]}")
        con.execute(
            f"CREATE TEMP TABLE {self.table} AS WITH {_pairs_cte(with_overrides)} SELECT * FROM pairs",
            {"a": self.a, "b": self.b},
        )

    def close(self) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {self.table}")

    def __enter__(self) -> RunComparison:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def mcnemar(self, *, providers: list[str] | None = None, rest: bool = False) -> list[dict[str, Any]]:
        """Paired flips and McNemar's exact p over all pairs, per provider, per template (of run A) and both.

        regressions = b (pass in A, fail in B), fixes = c (fail in A, pass in B); *_same_answer count
        the flips whose answer did not change (same answer_hash): the evaluation or the inputs changed.
        With `providers`, only their rows besides the '(all)' ones (in that order), and with `rest` the
        other providers' pairs summed in rows of provider None.
        """
        counts = """count(*) AS pairs,
                       count(*) FILTER (WHERE va AND vb) AS both_pass,
                       count(*) FILTER (WHERE NOT va AND NOT vb) AS both_fail,
                       count(*) FILTER (WHERE va AND NOT vb) AS regressions,
                       count(*) FILTER (WHERE NOT va AND vb) AS fixes,
                       count(*) FILTER (WHERE va AND NOT vb AND same_answer) AS regressions_same_answer,
                       count(*) FILTER (WHERE NOT va AND vb AND same_answer) AS fixes_same_answer"""
        if providers is None:
            rows = query_dicts(
                self.con,
                f"""SELECT CASE WHEN grouping(provider) = 1 THEN '{ALL}' ELSE provider END AS provider,
                           CASE WHEN grouping(template) = 1 THEN '{ALL}' ELSE template END AS template,
                           {counts}
                    FROM {self.table}
                    GROUP BY GROUPING SETS ((), (provider), (template), (provider, template))
                    ORDER BY grouping(provider) DESC, grouping(template) DESC, provider, template""",
            )
        else:
            rows = query_dicts(
                self.con,
                f"""{shown_pairs_cte(self.table)}
                    SELECT CASE WHEN grouping(shown) = 1 THEN '{ALL}' ELSE shown END AS provider,
                           CASE WHEN grouping(template) = 1 THEN '{ALL}' ELSE template END AS template,
                           {counts}
                    FROM t
                    GROUP BY GROUPING SETS ((), (shown), (template), (shown, template))
                    HAVING grouping(shown) = 1 OR shown IS NOT NULL OR $rest
                    ORDER BY grouping(shown) DESC, CASE WHEN grouping(shown) = 0 THEN min(i) END NULLS LAST,
                             grouping(template) DESC, template""",
                {SHOWN_NAMES: list(providers), "rest": rest},
            )
        for row in rows:
            row["p_value"] = mcnemar_exact(int(row["regressions"]), int(row["fixes"]))
        return rows

    def flips(self, *, limit: int = 50, offsets: dict[str, int] | None = None) -> dict[str, list[dict[str, Any]]]:
        """One page each of regressions (pass -> fail) and fixes (fail -> pass); the counts are in
        flip_summary. `offsets` maps kind -> offset (default 0).

        Each row says why it flipped: 'answer changed' (different answer_hash), or, for the same answer,
        'only the rules changed' (the evaluations' rules differ), 'routing or retrieval changed' (template,
        classification or retrieved items differ) or 'verdicts differ' (same answer, rules and inputs).
        """
        offsets = {kind: 0 for kind in FLIP_KINDS} | (offsets or {})
        rules_differ = _rules_differ(self.con, self.a, self.b)
        rows = query_dicts(
            self.con,
            f"""WITH page AS (
                (SELECT 'regressions' AS kind, * FROM {self.table} WHERE va AND NOT vb
                 ORDER BY template, response_a LIMIT $limit OFFSET $regressions_offset)
                UNION ALL
                (SELECT 'fixes' AS kind, * FROM {self.table} WHERE NOT va AND vb
                 ORDER BY template, response_a LIMIT $limit OFFSET $fixes_offset)
            ),
            diff AS (
                SELECT pg.response_a,
                       string_agg(ca.check_name || ' ' || ca.verdict || ' → ' || cb.verdict, '; '
                                  ORDER BY list_position({CHECK_LIST_SQL}, ca.check_name)) AS check_diff
                FROM page pg
                JOIN check_results ca ON ca.evaluation_id = $a AND ca.response_id = pg.response_a
                JOIN check_results cb ON cb.evaluation_id = $b AND cb.response_id = pg.response_b
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
            SELECT pg.kind, pg.question_id, pg.provider,
                   CASE WHEN pg.template = pg.template_b THEN pg.template
                        ELSE pg.template || ' → ' || pg.template_b END AS template,
                   q.question, CASE WHEN pg.va THEN 'PASS' ELSE 'FAIL' END AS verdict_a,
                   CASE WHEN pg.vb THEN 'PASS' ELSE 'FAIL' END AS verdict_b,
                   CASE WHEN NOT pg.same_answer THEN 'answer changed'
                        WHEN $rules_differ THEN 'same answer — only the rules changed'
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
            ORDER BY pg.kind, pg.template, pg.response_a""",
            {"limit": limit, "regressions_offset": offsets["regressions"], "fixes_offset": offsets["fixes"],
             "a": self.a, "b": self.b, "rules_differ": rules_differ},
        )
        out: dict[str, list[dict[str, Any]]] = {kind: [] for kind in FLIP_KINDS}
        for row in rows:
            out[row.pop("kind")].append(row)
        return out


def flip_summary(tests: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Regressions and fixes over all pairs, each split into 'answer changed' and 'same answer'
    (from the McNemar rows: no extra query)."""
    overall = next((t for t in tests if t["provider"] == ALL and t["template"] == ALL), None)
    out = {}
    for kind in FLIP_KINDS:
        count = int(overall[kind]) if overall else 0
        same = int(overall[f"{kind}_same_answer"]) if overall else 0
        out[kind] = {"count": count, "answer_changed": count - same, "same_answer": same}
    return out


def _rules_differ(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> bool:
    a, b = evaluation_info(con, evaluation_a) or {}, evaluation_info(con, evaluation_b) or {}
    return a.get("rules_hash") != b.get("rules_hash")
