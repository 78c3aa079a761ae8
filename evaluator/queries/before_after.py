"""The Before/after page: one run under two evaluations A and B (e.g. recorded -> t3_aware).

Everything is aggregated in DuckDB from the two evaluations' rows (filtered by evaluation id
first); the flipped responses are paged in SQL and their check-level diff is computed for the
rows of one page only.

False-failure rate under an evaluation X (the other one is Y): the share of responses that X
fails although they should pass — a reviewer's overrides make the response pass, or, when no
reviewer has ruled on it, Y passes it. A reviewer's ruling wins over Y: a response a reviewer
failed is never a false failure. Denominator: all responses of the group. Both rates use the
computed verdicts of A and B; the reviewer's ruling is the effective verdict of overridden responses.
"""

from __future__ import annotations

import uuid
from typing import Any

import duckdb

from evaluator.queries.effective import latest_overrides_cte
from evaluator.queries.local_copy import computed_pairs, reading
from evaluator.queries.overview import (
    CHECK_LIST_SQL,
    REVIEWS_CTE,
    RULESET_ORDER,
    SHOWN_NAMES,
    evaluation_info,
    latest_evaluation,
    query_dicts,
    ranked_names,
    reviewed_cte,
    rulesets,
    shown_pairs_cte,
    verdicts_cte,
)
from evaluator.rules.describe import PEER_TOOLS, describe_change
from evaluator.rules.load import load_rules, rules_from_text
from evaluator.rules.model import Rules
from evaluator.store.db import OVER_ALL_ROWS, quote_ident

__all__ = [
    "CHECK_CHANGES_UP_TO", "FALSE_FAILURE_DEFINITION", "RULESET_ORDER", "SLOWER_LIMIT", "BeforeAfter", "durations",
    "evaluation_info", "flip_count", "latest_evaluation", "non_t3_changes", "recorded_differences", "rule_change",
    "reading", "rulesets",
]

FALSE_FAILURE_DEFINITION = (
    "False-failure rate under an evaluation = the responses it fails that should pass, as a share of all "
    "responses of the group. A failed response should pass when a reviewer's overrides make it pass, or, "
    "when no reviewer has ruled on it, when the other evaluation passes it (a reviewer's FAIL is never a "
    "false failure)."
)
SLOWER_LIMIT = 1.5  # the fix may take at most 50% longer than the evaluation it replaces
CHECK_CHANGES_UP_TO = 100_000  # flipped responses whose check-level changes are counted on one page run


def _pairs(with_overrides: bool) -> str:
    """CTEs ending in `pairs(response_id, template, va, vb, ca, cb, ra, rb)`: one row per response evaluated
    by both A and B; verdicts are booleans (PASS = true). va/vb = shown verdicts (effective when
    with_overrides), ca/cb = computed ones, ra/rb = a reviewer's ruling (the effective verdict of overridden
    responses, else NULL). Parameters: $a, $b (the evaluations' ids)."""
    return f"""{REVIEWS_CTE},
        {verdicts_cte('va', with_overrides, '$a')},
        {verdicts_cte('vb', with_overrides, '$b')},
        pairs AS (
            SELECT a.response_id, a.template_group AS template, a.pass AS va, b.pass AS vb,
                   a.computed_pass AS ca, b.computed_pass AS cb, a.reviewed_pass AS ra, b.reviewed_pass AS rb
            FROM va a JOIN vb b ON b.response_id = a.response_id
        )"""


class BeforeAfter:
    """One run under evaluations A and B. The pairs of verdicts are computed once (into a TEMP table of
    this connection, dropped on close) and the summary, check-level changes and flipped pages are read
    from it, so a page run passes over the run's million rows once, not once per figure.

        with BeforeAfter(con, a, b, with_overrides=False) as ba:
            rows = ba.summary(); changes = ba.check_changes(); page = ba.flips(limit=25)
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int, *,
                 with_overrides: bool = False) -> None:
        self.con, self.a, self.b = con, int(evaluation_a), int(evaluation_b)
        self.temp = quote_ident(f"pm_before_after_{uuid.uuid4().hex[:12]}")
        computed = computed_pairs(con, self.a, self.b)
        if computed is None:
            con.execute(
                f"""CREATE TEMP TABLE {self.temp} AS
                    WITH {_pairs(with_overrides)}
                    SELECT p.*, r.run_id, r.question_id, r.provider
                    FROM pairs p JOIN responses r ON r.response_id = p.response_id""",
                {"a": self.a, "b": self.b},
            )
            self.table = self.temp
            return
        # A local copy keeps the computed pairs (they never change): only the reviewers' rulings of
        # the few overridden responses are read here, and laid over them by each figure's query.
        con.execute(
            f"""CREATE TEMP TABLE {self.temp} AS
                WITH {REVIEWS_CTE}, {reviewed_cte('xa', '$a')}, {reviewed_cte('xb', '$b')}
                SELECT response_id, xa.pass AS ra, xb.pass AS rb FROM xa FULL JOIN xb USING (response_id)""",
            {"a": self.a, "b": self.b},
        )
        va, vb = ("coalesce(x.ra, c.ca)", "coalesce(x.rb, c.cb)") if with_overrides else ("c.ca", "c.cb")
        self.table = f"""(SELECT c.response_id, c.template, {va} AS va, {vb} AS vb, c.ca, c.cb, x.ra, x.rb,
                                 c.run_id, c.question_id, c.provider
                          FROM {computed} c LEFT JOIN {self.temp} x ON x.response_id = c.response_id)"""

    def close(self) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {self.temp}")

    def __enter__(self) -> BeforeAfter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self, *, providers: list[str] | None = None, rest: bool = False) -> list[dict[str, Any]]:
        """Per provider x template (and per template over all providers, provider '(all)'): n, passes,
        pass rates, false failures and flips of A and B.

        With `providers`, only their rows besides the '(all)' ones (in that order), and with `rest` one
        more row per template summing the other providers (provider None); `providers` then counts
        the providers of each row."""
        counts = """count(*) AS n,
                       count(*) FILTER (WHERE va) AS passed_a,
                       count(*) FILTER (WHERE vb) AS passed_b,
                       count(*) FILTER (WHERE NOT ca AND coalesce(ra, cb)) AS false_failures_a,
                       count(*) FILTER (WHERE NOT cb AND coalesce(rb, ca)) AS false_failures_b,
                       count(*) FILTER (WHERE NOT va AND vb) AS fail_to_pass,
                       count(*) FILTER (WHERE va AND NOT vb) AS pass_to_fail"""
        if providers is None:
            rows = query_dicts(
                self.con,
                f"""SELECT CASE WHEN grouping(provider) = 1 THEN '(all)' ELSE provider END AS provider, template,
                           {counts}
                    FROM {self.table}
                    GROUP BY GROUPING SETS ((provider, template), (template))
                    ORDER BY grouping(provider), provider, template""",
            )
        else:
            rows = query_dicts(
                self.con,
                f"""{shown_pairs_cte(self.table)}
                    SELECT CASE WHEN grouping(shown) = 1 THEN '(all)' ELSE shown END AS provider, template,
                           {counts}, count(DISTINCT provider) AS providers
                    FROM t
                    GROUP BY GROUPING SETS ((shown, template), (template))
                    HAVING grouping(shown) = 1 OR shown IS NOT NULL OR $rest
                    ORDER BY grouping(shown), CASE WHEN grouping(shown) = 0 THEN min(i) END NULLS LAST, template""",
                {SHOWN_NAMES: list(providers), "rest": rest},
            )
        for row in rows:
            n = row["n"]
            row["pass_rate_a"] = row["passed_a"] / n
            row["pass_rate_b"] = row["passed_b"] / n
            row["delta"] = row["pass_rate_b"] - row["pass_rate_a"]
            row["false_failure_rate_a"] = row["false_failures_a"] / n
            row["false_failure_rate_b"] = row["false_failures_b"] / n
            row["flipped"] = row["fail_to_pass"] + row["pass_to_fail"]
        return rows

    def providers(self, *, limit: int, offset: int = 0, contains: str | None = None) -> tuple[int, list[str]]:
        """The run's providers by responses, most first (those holding `contains`, ignoring case):
        (how many, the `limit` names from `offset`)."""
        return ranked_names(self.con, f"SELECT provider AS name, 1 AS weight FROM {self.table}",
                            limit=limit, offset=offset, contains=contains)

    def has_provider(self, provider: str) -> bool:
        return bool(self.con.execute(f"SELECT count(*) FROM {self.table} WHERE provider = $provider",
                                     {"provider": provider}).fetchall()[0][0])

    def flip_count(self, *, provider: str | None = None, template: str | None = None) -> int:
        """How many responses flipped (of this provider / template when given)."""
        return int(self.con.execute(
            f"""SELECT count(*) FROM {self.table}
                WHERE va <> vb AND ($provider IS NULL OR provider = $provider)
                  AND ($template IS NULL OR template = $template)""",
            {"provider": provider, "template": template},
        ).fetchall()[0][0])

    def non_t3_changes(self, *, limit: int = 10) -> tuple[int, int, list[dict[str, Any]]]:
        """Verdicts that changed outside T3 (a fix for T3 must not change them): (how many flipped,
        in how many provider x template groups, the `limit` groups with the most flips)."""
        rows = self.con.execute(
            f"""SELECT provider, template, count(*) AS flipped,
                       sum(count(*)) {OVER_ALL_ROWS} AS total, count(*) {OVER_ALL_ROWS} AS groups
                FROM {self.table} WHERE template <> 'T3' AND va <> vb
                GROUP BY provider, template ORDER BY flipped DESC, template, provider LIMIT $limit""",
            {"limit": limit},
        ).fetchall()
        if not rows:
            return 0, 0, []
        return (int(rows[0][3]), int(rows[0][4]),
                [{"provider": p, "template": t, "flipped": int(n)} for p, t, n, _, _ in rows])

    def check_changes(self, *, up_to: int = CHECK_CHANGES_UP_TO) -> list[dict[str, Any]]:
        """Among the flipped responses: computed check verdicts that differ between A and B, counted per
        check x template x (A -> B). Only the flipped responses' checks are joined; past `up_to` flipped
        responses, only the first `up_to` (by response id) are counted, to bound the page's time — compare
        the total of flip_count to `up_to` to say so."""
        return query_dicts(
            self.con,
            f"""WITH flipped AS (SELECT response_id, template FROM {self.table} WHERE va <> vb
                             ORDER BY response_id LIMIT $up_to)
                SELECT ca.check_name AS "check", f.template, ca.verdict AS verdict_a, cb.verdict AS verdict_b,
                       count(*) AS responses
                FROM check_results ca
                JOIN flipped f ON f.response_id = ca.response_id
                JOIN check_results cb ON cb.evaluation_id = $b AND cb.response_id = ca.response_id
                                     AND cb.check_name = ca.check_name
                WHERE ca.evaluation_id = $a AND ca.verdict <> cb.verdict
                GROUP BY ca.check_name, f.template, ca.verdict, cb.verdict
                ORDER BY list_position({CHECK_LIST_SQL}, ca.check_name), ca.check_name, f.template,
                         verdict_a, verdict_b""",
            {"up_to": up_to, "a": self.a, "b": self.b},
        )

    def flips(self, *, provider: str | None = None, template: str | None = None, limit: int = 50,
              offset: int = 0) -> list[dict[str, Any]]:
        """One page of the responses whose overall verdict differs between A and B (count: flip_count).

        Each row: question_id, provider, template, question, verdict_a, verdict_b, check_diff
        (e.g. 'cites_shlokas FAIL → N/A'), comment (from the run file), reviewer (latest overrides).
        """
        where = ["va <> vb"]
        params: dict[str, Any] = {"limit": limit, "offset": offset, "a": self.a, "b": self.b}
        if provider:
            where.append("provider = $provider")
            params["provider"] = provider
        if template:
            where.append("template = $template")
            params["template"] = template
        return query_dicts(
            self.con,
            f"""WITH page AS (
                SELECT * FROM {self.table} WHERE {' AND '.join(where)}
                ORDER BY template, question_id, provider LIMIT $limit OFFSET $offset
            ),
            diff AS (
                SELECT ca.response_id,
                       string_agg(ca.check_name || ' ' || ca.verdict || ' → ' || cb.verdict, '; '
                                  ORDER BY list_position({CHECK_LIST_SQL}, ca.check_name)) AS check_diff
                FROM check_results ca
                JOIN check_results cb ON cb.evaluation_id = $b AND cb.response_id = ca.response_id
                                     AND cb.check_name = ca.check_name
                WHERE ca.evaluation_id = $a AND ca.response_id IN (SELECT response_id FROM page)
                  AND cb.response_id IN (SELECT response_id FROM page)
                  AND ca.verdict <> cb.verdict
                GROUP BY ca.response_id
            ),
            {latest_overrides_cte("page_overrides", columns="*",
                                  where="response_id IN (SELECT response_id FROM page)").strip()},
            reviewed AS (
                SELECT response_id,
                       string_agg(target || ' → ' || new_value || ' (' || reviewer || ': ' || reason || ')', '; '
                                  ORDER BY target) AS reviewer
                FROM page_overrides
                GROUP BY response_id
            )
            SELECT pg.question_id, pg.provider, pg.template, q.question,
                   CASE WHEN pg.va THEN 'PASS' ELSE 'FAIL' END AS verdict_a,
                   CASE WHEN pg.vb THEN 'PASS' ELSE 'FAIL' END AS verdict_b,
                   coalesce(d.check_diff, '(no check changed: a reviewer override decides)') AS check_diff,
                   r.comment, rv.reviewer, pg.response_id
            FROM page pg
            JOIN responses r ON r.response_id = pg.response_id
            JOIN questions q ON q.run_id = pg.run_id AND q.question_id = pg.question_id
            LEFT JOIN diff d ON d.response_id = pg.response_id
            LEFT JOIN reviewed rv ON rv.response_id = pg.response_id
            ORDER BY pg.template, pg.question_id, pg.provider""",
            params,
        )


def recorded_differences(con: duckdb.DuckDBPyConnection, recorded: int, recomputed: int, *,
                         limit: int = 50) -> tuple[int, list[dict[str, Any]]]:
    """Responses whose overall verdict differs between the run file's recorded verdicts and a recompute
    of the run (e.g. legacy): (how many, the first `limit` by template, question, provider).

    Each row: response_id, question_id, provider, template (the recompute's group), recorded, recomputed
    (overall verdicts) and because: the checks whose verdicts differ, with the recompute's reason
    ('cites_shlokas PASS → FAIL: no inline shloka citation'), so the page can say why."""
    cursor = con.execute(
        f"""WITH differ AS (
                SELECT b.response_id, b.template_group AS template, a.overall AS recorded, b.overall AS recomputed,
                       count(*) {OVER_ALL_ROWS} AS total
                FROM response_results a
                JOIN response_results b ON b.evaluation_id = $recomputed AND b.response_id = a.response_id
                WHERE a.evaluation_id = $recorded AND a.overall <> b.overall),
            page AS (
                SELECT d.*, r.question_id, r.provider FROM differ d JOIN responses r USING (response_id)
                ORDER BY d.template, r.question_id, r.provider LIMIT $limit),
            why AS (
                SELECT cb.response_id,
                       string_agg(cb.check_name || ' ' || ca.verdict || ' → ' || cb.verdict
                                  || coalesce(': ' || nullif(cb.reason, ''), ''), '; '
                                  ORDER BY list_position({CHECK_LIST_SQL}, cb.check_name)) AS because
                FROM check_results cb
                JOIN check_results ca ON ca.evaluation_id = $recorded AND ca.response_id = cb.response_id
                                     AND ca.check_name = cb.check_name
                WHERE cb.evaluation_id = $recomputed AND cb.response_id IN (SELECT response_id FROM page)
                  AND ca.verdict <> cb.verdict
                GROUP BY cb.response_id)
            SELECT p.response_id, p.question_id, p.provider, p.template, p.recorded, p.recomputed,
                   coalesce(w.because, 'no check verdict differs: the overall verdicts were recorded as they are')
                       AS because, p.total
            FROM page p LEFT JOIN why w USING (response_id)
            ORDER BY p.template, p.question_id, p.provider""",
        {"recorded": int(recorded), "recomputed": int(recomputed), "limit": int(limit)},
    )
    keys = [d[0] for d in cursor.description or ()]
    rows = [dict(zip(keys, row, strict=True)) for row in cursor.fetchall()]
    total = int(rows[0]["total"]) if rows else 0
    return total, [{k: v for k, v in row.items() if k != "total"} for row in rows]


def non_t3_changes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows (per provider) where a verdict outside T3 changed — the fix must not do that."""
    return [r for r in rows if r["provider"] != "(all)" and r["template"] != "T3" and r["flipped"]]


def flip_count(rows: list[dict[str, Any]], *, provider: str | None = None, template: str | None = None) -> int:
    """How many responses flipped, from the summary rows (no extra query)."""
    return sum(
        r["flipped"] for r in rows
        if r["provider"] != "(all)" and provider in (None, r["provider"]) and template in (None, r["template"])
    )


def durations(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> dict[str, Any]:
    """Both evaluations' durations and B's relative to A (None when either has none, e.g. recorded)."""
    a = evaluation_info(con, evaluation_a) or {}
    b = evaluation_info(con, evaluation_b) or {}
    da, db = a.get("duration_s"), b.get("duration_s")
    ratio = db / da if da and db is not None else None
    return {
        "a_s": da, "b_s": db, "ratio": ratio,
        "within_limit": None if ratio is None else ratio <= SLOWER_LIMIT,
        "limit": SLOWER_LIMIT,
    }


def _evaluation_rules(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> tuple[str, Rules | None, str | None]:
    """(rule set, its rules as stored with the evaluation or None for recorded verdicts, profile)."""
    row = con.execute("""SELECT e.ruleset, e.rules_text, e.rules_source, coalesce(e.profile, r.profile)
                         FROM evaluations e JOIN runs r USING (run_id) WHERE e.evaluation_id = $e""",
                      {"e": int(evaluation_id)}).fetchone()
    if row is None:
        raise ValueError(f"no evaluation {evaluation_id}")
    ruleset, text, source, profile = row
    if not text:  # recorded verdicts, or an evaluation stored before the rules were kept: the shipped ones
        return ruleset, (None if ruleset == "recorded" else load_rules()), profile
    return ruleset, rules_from_text(text, source or "<stored rules>"), profile


def peer_tool(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> str | None:
    """The peer tool (its name) whose own grades are this recorded evaluation's verdicts, else None
    (our own evaluator's recorded verdicts, or not a recorded evaluation)."""
    row = con.execute("SELECT e.ruleset, r.source_format FROM evaluations e JOIN runs r USING (run_id) "
                      "WHERE e.evaluation_id = $e", {"e": int(evaluation_id)}).fetchone()
    return PEER_TOOLS.get(row[1]) if row is not None and row[0] == "recorded" else None


def rule_change(con: duckdb.DuckDBPyConnection, evaluation_a: int, evaluation_b: int) -> str | None:
    """One sentence saying what evaluation B's rule set does differently from A's, generated from the
    two rule sets' difference (evaluator.rules.describe); None when B holds recorded verdicts."""
    name_a, rules_a, profile = _evaluation_rules(con, evaluation_a)
    name_b, rules_b, _ = _evaluation_rules(con, evaluation_b)
    if rules_b is None:
        return None
    [(source_format,)] = con.execute("SELECT r.source_format FROM evaluations e JOIN runs r USING (run_id) "
                                     "WHERE e.evaluation_id = $e", {"e": int(evaluation_a)}).fetchall()
    try:
        return describe_change(name_a, rules_a, name_b, rules_b, profile, recorded_by=source_format)
    except ValueError:  # a rule set one of the stored rules files does not define: nothing to compare
        return None
