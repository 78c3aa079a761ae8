"""The Overview page: runs, pass rates per run x provider x template, check verdicts, flags.

Also the SQL building blocks the other PM query modules share (before_after, compare): the
stored evaluations of a run, and effective verdicts that scale. Every figure is an aggregate
computed in DuckDB, filtered by evaluation id first; Python only adds Wilson intervals to the
few aggregated rows.

Effective verdicts follow evaluator/queries/effective.py exactly (the latest override per
response and target; an 'overall' override decides; otherwise any effective check FAIL
fails), but are computed only for the responses a reviewer touched — a handful — instead of
re-deriving every response's verdict from its checks: the rest keep their stored overall.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import duckdb

from evaluator.core.stats import wilson_interval
from evaluator.core.types import CHECK_NAMES
from evaluator.queries import report
from evaluator.queries.effective import (
    effective_check_verdict,
    effective_overall,
    latest_overrides_cte,
    overall_from_checks,
    reviewed_ids,
)
from evaluator.queries.report import query_dicts
from evaluator.queries.runs import list_runs, run_names
from evaluator.store import sql_params
from evaluator.store.db import OVER_ALL_ROWS
from evaluator.store.postgres import few_rows
from evaluator.store.sql_params import Params

__all__ = [
    "CHECK_ORDER", "RULESET_ORDER", "check_counts", "common_rulesets", "evaluation_info", "flag_counts",
    "latest_evaluation", "latest_evaluations", "pass_rate_counts", "pass_rates_by_run", "provider_ranking",
    "query_dicts", "ranked_names", "REVIEWS_CTE", "Shown", "reviewed_cte", "rulesets", "run_names", "runs_table",
    "verdicts_cte",
]

RULESET_ORDER = ("recorded", "legacy", "t3_aware")
CHECK_ORDER: Sequence[str] = CHECK_NAMES  # the registry's display order (evaluator.core.registry)
# The same order as a SQL list for list_position() (a literal: it is the same in every query).
# Registered names are ASCII identifiers (the registry refuses others), so the literal cannot break out.
CHECK_LIST_SQL = "[" + ", ".join(f"'{c}'" for c in CHECK_ORDER) + "]"
EVALUATION_KEYS = ["evaluation_id", "run", "ruleset", "rules_hash", "created_at", "duration_s", "n_responses"]



# --- many names (issue 15): a run may have 100k providers; pages show a ranked page of them ---


def ranked_names(con: duckdb.DuckDBPyConnection, source_sql: str, params: Mapping[str, Any] | None = None, *,
                 limit: int, offset: int = 0, contains: str | None = None) -> tuple[int, list[str]]:
    """Names of `source_sql` (columns `name`, `weight`; its `$name` parameters in `params`, none named
    `ranked_…`) by total weight, most first, then by name: (how many names there are — those holding
    `contains`, ignoring case, when given — and the `limit` names from `offset`). All in SQL: only one
    page of names reaches Python."""
    filtered = Params("ranked").update(params or {})
    where = f"WHERE contains(lower(name), lower({filtered.bind(contains)}))" if contains else ""
    if limit > 0:
        page = Params("ranked_page").update(filtered)
        rows = con.execute(
            f"""WITH src AS ({source_sql})
                SELECT name, count(*) {OVER_ALL_ROWS} AS total FROM src {where}
                GROUP BY name ORDER BY sum(weight) DESC, name
                LIMIT {page.bind(int(limit))} OFFSET {page.bind(int(offset))}""",
            page.values,
        ).fetchall()
        if rows:
            return int(rows[0][1]), [str(row[0]) for row in rows]
    total = con.execute(f"WITH src AS ({source_sql}) SELECT count(DISTINCT name) FROM src {where}",
                        filtered.values).fetchall()[0][0]
    return int(total or 0), []


def provider_ranking(con: duckdb.DuckDBPyConnection, evaluation_ids: Sequence[int], *, limit: int, offset: int = 0,
                     contains: str | None = None) -> tuple[int, list[str]]:
    """Providers of these evaluations by responses (from the stored counts): (how many, one page of names)."""
    ids = [int(i) for i in evaluation_ids]
    if not ids:
        return 0, []
    p = Params("evaluation")
    return ranked_names(
        con,
        f"""SELECT provider AS name, n AS weight FROM evaluation_counts
            WHERE target = 'overall' AND evaluation_id IN ({p.list(ids)})""",
        p.values, limit=limit, offset=offset, contains=contains,
    )


# The providers a page shows (bound as one list parameter, $shown_names), each with its place.
SHOWN_NAMES = "shown_names"
SHOWN_CTE = (f"shown AS (SELECT unnest(l) AS name, unnest(range(1, len(l) + 1)) AS i "
             f"FROM (SELECT ${SHOWN_NAMES}::VARCHAR[] AS l))")


def shown_pairs_cte(table: str) -> str:
    """`WITH shown …, t …`: the rows of a pairs table (a quoted name or a parenthesised query) with the
    shown provider's name and place in `shown`/`i` (NULL for the providers not shown); binds the names
    as `$shown_names`."""
    return (f"WITH {SHOWN_CTE},\n"
            f"t AS (SELECT p.*, s.name AS shown, s.i FROM {table} p LEFT JOIN shown s ON s.name = p.provider)")


class Shown:
    """Restrict an aggregate to some providers: their rows, and with `rest` one row summing all the others.

    The provider is mapped before the rows are grouped (`provider(col)` is the shown name, NULL for
    the others), so 100k providers fold into the page's 20 groups plus one in a single pass, instead
    of grouping every provider first. Start the query with `with_(…)` and bind `params` (the names,
    as `$shown_names`). Without names (`names` None) it changes nothing."""

    def __init__(self, names: Sequence[str] | None, rest: bool) -> None:
        self.names, self.rest = (None if names is None else list(names)), rest

    @property
    def on(self) -> bool:
        return self.names is not None

    def with_(self, *ctes: str) -> str:
        """`WITH shown AS (…), ctes…` (or just the others when off); bind `params` with the query's."""
        return "WITH " + ", ".join([SHOWN_CTE, *ctes] if self.on else ctes)

    @property
    def params(self) -> dict[str, Any]:
        return {SHOWN_NAMES: self.names} if self.on else {}

    def provider(self, column: str) -> str:
        return "shown.name" if self.on else column

    def join(self, column: str) -> str:
        return f"{'LEFT JOIN' if self.rest else 'JOIN'} shown ON shown.name = {column}" if self.on else ""

    def rank(self) -> str:
        """An aggregate giving each group the place of its provider (the rest last); only when on."""
        return ", min(shown.i) AS provider_rank" if self.on else ""


# The latest override per (response, target). No parameters.
REVIEWS_CTE = latest_overrides_cte("reviews")


def reviewed_cte(name: str, evaluations: str, reviewed: str = "SELECT response_id FROM reviews") -> str:
    """CTE `name(evaluation_id, response_id, pass)`: whether the effective overall verdict is PASS, for every
    response a reviewer overrode (overall or a check), under the evaluation(s) `evaluations` names (the SQL
    of an IN list: `$a`, or `Params.list(ids)`); `reviewed`, what goes in `response_id IN (…)` for the
    responses overridden (`Params.among(reviewed_ids(con))`). Needs REVIEWS_CTE before it."""
    return f"""{name} AS (
        SELECT c.evaluation_id, c.response_id,
               {effective_overall("any_value(oo.new_value)", overall_from_checks(effective_check_verdict()))}
                   = 'PASS' AS pass
        FROM (SELECT * FROM check_results WHERE evaluation_id IN ({evaluations}) AND response_id IN ({reviewed})) c
        LEFT JOIN reviews o ON o.response_id = c.response_id AND o.target = c.check_name
        LEFT JOIN reviews oo ON oo.response_id = c.response_id AND oo.target = 'overall'
        GROUP BY c.evaluation_id, c.response_id
        HAVING bool_or(o.new_value IS NOT NULL) OR bool_or(oo.new_value IS NOT NULL)
    )"""


def verdicts_cte(name: str, with_overrides: bool, evaluations: str) -> str:
    """CTEs ending in `name(evaluation_id, response_id, pass, computed_pass, reviewed_pass, template_group)` for
    the evaluation(s) `evaluations` names (as in reviewed_cte). Needs REVIEWS_CTE before it.

    Verdicts are booleans (PASS = true), which keeps the joins of a million rows light. `pass` is the
    effective verdict when with_overrides, else the computed one; `reviewed_pass` is the effective verdict
    of the responses a reviewer overrode (NULL for the others), in both cases.
    """
    return f"""{reviewed_cte(name + '_reviewed', evaluations)},
        {name} AS (
            SELECT rr.evaluation_id, rr.response_id,
                   {"coalesce(x.pass, rr.overall = 'PASS')" if with_overrides else "rr.overall = 'PASS'"} AS pass,
                   rr.overall = 'PASS' AS computed_pass, x.pass AS reviewed_pass, rr.template_group
            FROM response_results rr
            LEFT JOIN {name}_reviewed x ON x.evaluation_id = rr.evaluation_id AND x.response_id = rr.response_id
            WHERE rr.evaluation_id IN ({evaluations})
        )"""


def _ordered(names: list[str]) -> list[str]:
    known = [r for r in RULESET_ORDER if r in names]
    return known + sorted(n for n in names if n not in RULESET_ORDER)


def rulesets(con: duckdb.DuckDBPyConnection, run_name: str | None = None) -> list[str]:
    """Rule sets with a stored evaluation (of this run, or of any run): recorded, legacy, t3_aware first."""
    if run_name is None:
        rows = con.execute("SELECT DISTINCT ruleset FROM evaluations").fetchall()
    else:
        rows = con.execute(
            "SELECT DISTINCT e.ruleset FROM evaluations e JOIN runs r USING (run_id) WHERE r.name = $run",
            {"run": run_name},
        ).fetchall()
    return _ordered([row[0] for row in rows])


def common_rulesets(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> list[str]:
    """Rule sets under which both runs have a stored evaluation."""
    b = set(rulesets(con, run_b))
    return [r for r in rulesets(con, run_a) if r in b]


EVALUATION_SQL = """SELECT e.evaluation_id, r.name, e.ruleset, e.rules_hash, e.created_at, e.duration_s, e.n_responses
                    FROM evaluations e JOIN runs r USING (run_id)"""


def evaluation_info(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, Any] | None:
    rows = con.execute(EVALUATION_SQL + " WHERE e.evaluation_id = $evaluation_id",
                       {"evaluation_id": evaluation_id}).fetchall()
    return dict(zip(EVALUATION_KEYS, rows[0], strict=True)) if rows else None


def latest_evaluation(con: duckdb.DuckDBPyConnection, run_name: str, ruleset: str) -> dict[str, Any] | None:
    """The run's newest stored evaluation under this rule set (None when there is none)."""
    rows = con.execute(
        EVALUATION_SQL + " WHERE r.name = $run AND e.ruleset = $ruleset ORDER BY e.evaluation_id DESC LIMIT 1",
        {"run": run_name, "ruleset": ruleset},
    ).fetchall()
    return dict(zip(EVALUATION_KEYS, rows[0], strict=True)) if rows else None


def runs_table(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The runs of the store with the rule sets each has been evaluated under."""
    evaluated = dict(
        con.execute(
            """SELECT r.name, list(DISTINCT e.ruleset ORDER BY e.ruleset)
               FROM runs r JOIN evaluations e USING (run_id) GROUP BY r.name"""
        ).fetchall()
    )
    rows = list_runs(con)
    for row in rows:
        row["evaluations"] = ", ".join(_ordered(list(evaluated.get(row["name"], []))))
    return rows


def pass_rate_counts(
    con: duckdb.DuckDBPyConnection, evaluation_ids: Sequence[int], *, with_overrides: bool = False,
    providers: Sequence[str] | None = None, rest: bool = False,
) -> list[dict[str, Any]]:
    """Responses and passes per evaluation x provider x template, for several evaluations.

    From the counts stored with each evaluation; with overrides, corrected by the responses a
    reviewer overrode (their effective verdict replaces the computed one). With `providers`, only
    their rows (in that order), and with `rest` one more row per evaluation x template summing all
    the other providers (provider None, last)."""
    if not evaluation_ids:
        return []
    p = Params("evaluation")
    marks = p.list(int(i) for i in evaluation_ids)
    shown = Shown(providers, rest)
    computed = f"""computed AS (
            SELECT c.evaluation_id, {shown.provider('c.provider')} AS provider, c.template_group AS template,
                   sum(c.n)::BIGINT AS n,
                   coalesce(sum(c.n) FILTER (WHERE c.verdict = 'PASS'), 0)::BIGINT AS passed{shown.rank()}
            FROM evaluation_counts c {shown.join('c.provider')}
            WHERE c.target = 'overall' AND c.evaluation_id IN ({marks})
            GROUP BY ALL)"""
    order = ("c.provider_rank NULLS LAST, c.evaluation_id, c.template" if shown.on
             else "c.evaluation_id, c.provider, c.template")
    overridden = reviewed_ids(con) if with_overrides else []
    if not overridden:  # none: the stored counts are the effective ones
        sql = f"""{shown.with_(computed)}
            SELECT c.evaluation_id, c.provider, c.template, c.n, c.passed FROM computed c ORDER BY {order}"""
        return query_dicts(con, sql, {**shown.params, **p.values})
    reviewed = p.among(overridden)
    delta = f"""delta AS (
            SELECT x.evaluation_id, {shown.provider('r.provider')} AS provider, rr.template_group AS template,
                   sum(x.pass::INTEGER - (rr.overall = 'PASS')::INTEGER) AS d
            FROM reviewed x
            JOIN (SELECT * FROM response_results WHERE response_id IN ({reviewed})) rr
              ON rr.evaluation_id = x.evaluation_id AND rr.response_id = x.response_id
            JOIN (SELECT * FROM responses WHERE response_id IN ({reviewed})) r ON r.response_id = x.response_id
            {shown.join('r.provider')}
            GROUP BY ALL)"""
    sql = f"""{shown.with_(REVIEWS_CTE, reviewed_cte("reviewed", marks, reviewed), computed, delta)}
        SELECT c.evaluation_id, c.provider, c.template, c.n, (c.passed + coalesce(d.d, 0))::BIGINT AS passed
        FROM computed c
        LEFT JOIN delta d ON d.evaluation_id = c.evaluation_id AND d.template = c.template
                         AND d.provider IS NOT DISTINCT FROM c.provider
        ORDER BY {order}"""
    with few_rows(con) if len(overridden) <= sql_params.MAX_LISTED else nullcontext(con):
        return query_dicts(con, sql, {**shown.params, **p.values})


def with_wilson(row: dict[str, Any], passed: str = "passed", n: str = "n") -> dict[str, Any]:
    low, high = wilson_interval(int(row[passed]), int(row[n]))
    return {**row, "ci_low": low, "ci_high": high}


def latest_evaluations(con: duckdb.DuckDBPyConnection, ruleset: str) -> dict[int, str]:
    """evaluation id -> run name: each run's newest evaluation under `ruleset`, in the order of the runs."""
    latest = con.execute(
        """SELECT r.name, max(e.evaluation_id) FROM runs r JOIN evaluations e USING (run_id)
           WHERE e.ruleset = $ruleset GROUP BY r.name, r.run_id ORDER BY r.run_id""",
        {"ruleset": ruleset},
    ).fetchall()
    return {int(evaluation_id): name for name, evaluation_id in latest}


def pass_rates_by_run(
    con: duckdb.DuckDBPyConnection, ruleset: str, *, with_overrides: bool = False,
    providers: Sequence[str] | None = None, rest: bool = False, runs: Sequence[str] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Pass rates per run x provider x template, each run under its newest evaluation of `ruleset`.

    Returns the rows (run, evaluation_id, provider, template, n, passed, pass_rate, ci_low, ci_high)
    and the names of the runs that have no evaluation under that rule set. `providers` and `rest`
    as in pass_rate_counts (the rest's rows have provider None and come last in each run); `runs`
    limits both to these runs (in the store's order).
    """
    run_of = latest_evaluations(con, ruleset)
    if runs is not None:
        run_of = {eid: name for eid, name in run_of.items() if name in set(runs)}
    rows = [
        with_wilson({"run": run_of[row["evaluation_id"]], **row, "pass_rate": row["passed"] / row["n"]})
        for row in pass_rate_counts(con, list(run_of), with_overrides=with_overrides, providers=providers, rest=rest)
    ]
    order = {evaluation_id: i for i, evaluation_id in enumerate(run_of)}
    rank = {name: i for i, name in enumerate(providers or ())}
    rows.sort(key=lambda r: (order[r["evaluation_id"]], r["provider"] is None,
                             rank.get(r["provider"], 0) if providers is not None else r["provider"], r["template"]))
    missing = [name for name in run_names(con)
               if name not in run_of.values() and (runs is None or name in set(runs))]
    return rows, missing


def check_counts(
    con: duckdb.DuckDBPyConnection, evaluation_id: int, *, with_overrides: bool = False,
    providers: Sequence[str] | None = None, rest: bool = False,
) -> list[dict[str, Any]]:
    """PASS / FAIL / N/A counts per provider x template x check (effective check verdicts when with_overrides):
    the counts stored with the evaluation, corrected by reviewers' check overrides (each moves one
    response from its computed verdict to the reviewer's). `providers` and `rest` as in pass_rate_counts."""
    counted = """SELECT provider, template_group AS template, target AS "check", verdict, n
                 FROM evaluation_counts WHERE evaluation_id = $evaluation_id AND target <> 'overall'"""
    p = Params("reviewed")
    overridden = reviewed_ids(con) if with_overrides else []
    if overridden:  # none: the stored counts are the effective ones
        reviewed = p.among(overridden)
        counted += f"""
            UNION ALL
            SELECT r.provider, rr.template_group, c.check_name, moved.verdict, moved.n
            FROM reviews o
            JOIN (SELECT * FROM check_results
                  WHERE evaluation_id = $evaluation_id AND response_id IN ({reviewed})) c
              ON c.response_id = o.response_id AND c.check_name = o.target
            JOIN (SELECT * FROM response_results
                  WHERE evaluation_id = $evaluation_id AND response_id IN ({reviewed})) rr
              ON rr.response_id = c.response_id
            JOIN (SELECT * FROM responses WHERE response_id IN ({reviewed})) r ON r.response_id = c.response_id
            CROSS JOIN LATERAL (VALUES (c.verdict, -1), (o.new_value, 1)) AS moved(verdict, n)"""
    shown = Shown(providers, rest)
    sql = f"""{shown.with_(REVIEWS_CTE, f"counted AS ({counted})")}
            SELECT {shown.provider('k.provider')} AS provider, k.template, k."check",
                   coalesce(sum(k.n) FILTER (WHERE k.verdict = 'PASS'), 0)::BIGINT AS pass,
                   coalesce(sum(k.n) FILTER (WHERE k.verdict = 'FAIL'), 0)::BIGINT AS fail,
                   coalesce(sum(k.n) FILTER (WHERE k.verdict = 'N/A'), 0)::BIGINT AS na
            FROM counted k {shown.join('k.provider')}
            GROUP BY {shown.provider('k.provider')}, k.template, k."check"
            ORDER BY {'min(shown.i) NULLS LAST' if shown.on else 'provider'}, k.template,
                     list_position({CHECK_LIST_SQL}, k."check"), k."check"
            """
    # the results read are the reviewed responses' (and the stored counts); past MAX_LISTED the ids are
    # one bound list, which PostgreSQL never sees: then its split scan is the faster read
    with few_rows(con) if len(overridden) <= sql_params.MAX_LISTED else nullcontext(con):
        return query_dicts(con, sql, {**shown.params, **p.values, "evaluation_id": evaluation_id})


def flag_counts(con: duckdb.DuckDBPyConnection, evaluation_id: int, *, providers: Sequence[str] | None = None,
                rest: bool = False) -> tuple[list[dict[str, Any]], int | None]:
    """Flag counts per provider, and the evaluation they come from (recorded verdicts carry no flags,
    so for them it is the run's newest computed evaluation; None when there is none). `providers` and
    `rest` as in pass_rate_counts."""
    source = report.flags_evaluation_id(con, evaluation_id)
    if providers is None:
        return report.flag_counts(con, evaluation_id), source
    if source is None:
        return [], None
    shown = Shown(providers, rest)
    rows = query_dicts(
        con,
        f"""{shown.with_()}
            SELECT {shown.provider('f.provider')} AS provider, f.flag, sum(f.n)::BIGINT AS count
            FROM flag_counts f {shown.join('f.provider')}
            WHERE f.evaluation_id = $evaluation_id
            GROUP BY ALL ORDER BY min(shown.i) NULLS LAST, f.flag""",
        {**shown.params, "evaluation_id": source},
    )
    return rows, source
