"""SQL behind the Triage page: filtered, sorted, paginated responses of one evaluation (all in SQL).

Verdict filters use effective verdicts (latest override, else computed), so a response a
reviewer has already corrected leaves the "failing" list. Every value is a bound parameter;
free text is a literal, case-insensitive RE2 match (see search_pattern).

Contract with the Review page (its "queue"): Triage's display order for a sort is `SORTS[sort]`
then response id; `queue_position(con, filters, sort, response_id, page_size=...)` says where a
response sits in that order (1-based index, total, previous and next ids, the Triage page holding
it), computed with window functions in SQL, or None when the response does not match the filters.
The filters, sort and page size of a queue come from a Triage URL: dashboard.triage_url.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

from evaluator.core.types import CHECK_NAMES
from evaluator.pipeline import search_index
from evaluator.queries import local_copy
from evaluator.queries.effective import check_results_cte, response_results_cte, reviewed_ids
from evaluator.queries.overview import pass_rate_counts, ranked_names
from evaluator.queries.report import flags_evaluation_id, pass_rates, query_dicts
from evaluator.queries.review import (
    checks,
    default_evaluation,
    display_rules,
    evaluation_label,
    evaluations_of_run,
    flags,
    retrieved,
    run_id,
)
from evaluator.review.config import load_review_config
from evaluator.review.overrides import HAS_CARRIED_SQL, agreement
from evaluator.store.db import OVER_ALL_ROWS, fetch_one, fetch_value
from evaluator.store.sql_params import Params

__all__ = [
    "OVERRIDE_STATUSES", "PAGE_SIZE", "TriageFilters", "agreement", "checks", "count", "default_evaluation",
    "evaluation_label", "evaluations_of_run", "filter_options", "flags", "has_provider", "missing_search_index",
    "page_and_count", "pass_rate_page", "pass_rates", "providers", "retrieved", "run_id", "display_rules",
    "DEFAULT_SORT", "PAGE_SIZES", "QueuePosition", "SORTS", "computed_values", "first_id", "queue_position",
    "search_matches", "search_terms", "reading",
]

PAGE_SIZE = 50
PAGE_SIZES = (25, 50, 100, 250)
# The orders Triage offers (?sort=), each a key of SORT_SQL; ties keep response order.
SORTS = {
    "needs_review": "Needs a reviewer (failing, then flagged, first)",
    "response": "Response order",
    "verdict": "Verdict (failing first)",
    "flags": "Flags (most first)",
    "provider": "Provider",
    "template": "Template",
    "overridden": "Overridden first",
}
# A run opens on what needs a reviewer, not on PASS cards in file order (issue 31).
DEFAULT_SORT = "needs_review"
# Expressions over the filtered rows (eff = effective verdicts, fc = flag counts, r = responses: a sort naming r
# needs SORTS_READING_RESPONSES).
SORT_SQL = {
    "needs_review": "CASE WHEN eff.overall = 'FAIL' THEN 0 WHEN coalesce(fc.n_flags, 0) > 0 THEN 1 ELSE 2 END, "
                    "eff.response_id",
    "response": "eff.response_id",
    "verdict": "CASE eff.overall WHEN 'FAIL' THEN 0 WHEN 'PASS' THEN 1 ELSE 2 END, eff.response_id",
    "flags": "coalesce(fc.n_flags, 0) DESC, eff.response_id",
    "provider": "r.provider, eff.response_id",
    "template": "eff.template_group, eff.response_id",
    "overridden": "EXISTS (SELECT 1 FROM overrides o WHERE o.response_id = eff.response_id) DESC, eff.response_id",
}
SORTS_READING_RESPONSES = {"provider"}
OVERRIDE_STATUSES = {
    "any": "Any",
    "overridden": "Overridden",
    "not_overridden": "Not overridden",
    "carried": "Carried override available",
}


@dataclass(frozen=True)
class TriageFilters:
    evaluation_id: int
    provider: str | None = None
    template: str | None = None
    check: str = "overall"  # 'overall' or a check name: the verdict filter applies to it
    verdict: str | None = None
    flag: str | None = None
    override_status: str = "any"
    paradox: bool = False  # reviewer comment says "correct" but the effective overall verdict is FAIL
    text: str | None = None
    paradox_regex: str | None = None  # default: evaluator.review.config


INDEX_WORTH_IT_FROM = 100_000  # responses; below this a search reads every answer in a blink


def missing_search_index(con: duckdb.DuckDBPyConnection, run_id: int) -> int | None:
    """The run's size, when it is big enough for a search index to matter and has none."""
    size = int(fetch_value(con, "SELECT n_responses FROM runs WHERE run_id = $run_id", {"run_id": run_id}) or 0)
    return size if size >= INDEX_WORTH_IT_FROM and not search_index.is_built(con, run_id) else None


PROVIDERS_SQL = """SELECT provider AS name, n AS weight FROM evaluation_counts
                   WHERE evaluation_id = $evaluation_id AND target = 'overall'"""


def providers(con: duckdb.DuckDBPyConnection, evaluation_id: int, *, limit: int, offset: int = 0,
              contains: str | None = None) -> tuple[int, list[str]]:
    """The evaluation's providers by responses, most first (those holding `contains`, ignoring case):
    (how many, the `limit` names from `offset`). A run may have 100k providers: never list them all."""
    return ranked_names(con, PROVIDERS_SQL, {"evaluation_id": evaluation_id}, limit=limit, offset=offset,
                        contains=contains)


def has_provider(con: duckdb.DuckDBPyConnection, evaluation_id: int, provider: str) -> bool:
    return bool(fetch_value(con, """SELECT count(*) FROM evaluation_counts
                                    WHERE evaluation_id = $evaluation_id AND provider = $provider""",
                            {"evaluation_id": evaluation_id, "provider": provider}))


def pass_rate_page(con: duckdb.DuckDBPyConnection, evaluation_id: int, providers: list[str]) -> list[dict[str, Any]]:
    """Computed and effective pass rates per provider x template for one page of providers (in that order),
    the other providers summed in rows of provider None."""
    rows: dict[tuple[str | None, str], dict[str, Any]] = {}
    for with_overrides in (False, True):
        for row in pass_rate_counts(con, [evaluation_id], with_overrides=with_overrides, providers=providers,
                                    rest=True):
            out = rows.setdefault((row["provider"], row["template"]),
                                  {"provider": row["provider"], "template": row["template"], "n": row["n"]})
            out["pass_rate_effective" if with_overrides else "pass_rate"] = row["passed"] / row["n"]
    return list(rows.values())


def filter_options(con: duckdb.DuckDBPyConnection, evaluation_id: int) -> dict[str, list[str]]:
    """What the filters can choose from in this evaluation (providers: see `providers`)."""
    def values(sql: str, evaluation: int) -> list[str]:
        return [str(row[0]) for row in con.execute(sql, {"evaluation_id": evaluation}).fetchall()
                if row[0] is not None]

    # From the evaluation's verdict and flag counts (hundreds of rows, not millions: on a PostgreSQL
    # store every row read crosses the wire).
    source = flags_evaluation_id(con, evaluation_id)
    names = values("""SELECT DISTINCT target FROM evaluation_counts
                      WHERE evaluation_id = $evaluation_id AND target <> 'overall'""", evaluation_id)
    return {
        "template": values("""SELECT DISTINCT template_group FROM evaluation_counts
                              WHERE evaluation_id = $evaluation_id AND target = 'overall' ORDER BY 1""",
                           evaluation_id),
        "check": ["overall", *[c for c in CHECK_NAMES if c in names], *sorted(set(names) - set(CHECK_NAMES))],
        "flag": values("SELECT DISTINCT flag FROM flag_counts WHERE evaluation_id = $evaluation_id ORDER BY 1",
                       source or -1),
    }


# Straight and curly quotes match each other in a search, as they do in the checks.
QUOTE_CLASSES = {"'": "['\u2018\u2019]", "\u2018": "['\u2018\u2019]", "\u2019": "['\u2018\u2019]",
                 '"': '["\u201c\u201d]', "\u201c": '["\u201c\u201d]', "\u201d": '["\u201c\u201d]'}


def search_pattern(text: str) -> str:
    """A case-insensitive RE2 pattern matching `text` literally, quotes of either kind alike.
    (RE2 is DuckDB's regex engine: a backslash before ASCII punctuation makes it literal.
    One regex pass is about twice as fast as ILIKE over a million answers.)"""
    parts = []
    for char in text:
        if char in QUOTE_CLASSES:
            parts.append(QUOTE_CLASSES[char])
        elif char.isascii() and not char.isalnum() and not char.isspace():
            parts.append("\\" + char)
        else:
            parts.append(char)
    return "(?is)" + "".join(parts)


def order_by(sort: str) -> str:
    """The ORDER BY expressions of a sort (unknown sorts: response order)."""
    return SORT_SQL.get(sort, SORT_SQL[DEFAULT_SORT])


PHRASE = re.compile('["\u201c\u201d]([^"\u201c\u201d]*)["\u201c\u201d]')  # straight or curly double quotes


def search_terms(text: str) -> list[str]:
    """What a search asks for, each term a literal that must occur (in the question, answer or comment).

    Without a pair of double quotes the whole search is one literal ("King Dasharatha" as typed). With
    them, each quoted phrase is a term, quotes removed, and so is each stretch of text between phrases:
    `"Dasharatha"` finds what `Dasharatha` finds, `"King Dasharatha" Rama` needs both. Curly double quotes
    count as straight ones."""
    text = text.strip()
    if not PHRASE.search(text):
        return [text] if text else []
    terms, last = [], 0
    for match in PHRASE.finditer(text):
        terms += [text[last:match.start()].strip(), match.group(1).strip()]
        last = match.end()
    terms.append(text[last:].strip())
    return list(dict.fromkeys(t for t in terms if t))  # each once, in order


def search_matches(text: str | None, search: str | None) -> list[dict[str, Any]]:
    """Where the search's terms occur in `text`: spans of kind "search_match" ({start, end, text, kind})."""
    if not text or not search:
        return []
    found = []
    for term in search_terms(search):
        for match in re.finditer(search_pattern(term), text):
            if match.end() > match.start():
                found.append({"start": match.start(), "end": match.end(), "text": match.group(),
                              "kind": "search_match"})
    return found


def _query(con: duckdb.DuckDBPyConnection, filters: TriageFilters,
           ids: list[int] | None = None, sort: str = DEFAULT_SORT, *, rows: bool = False) -> tuple[str, dict[str, Any]]:
    """FROM/WHERE of the filtered responses (only `ids`, if given: they passed the filters already),
    with its named parameters. The rows can be ordered by `order_by(sort)`. Names `$evaluation_id`,
    `$c_…` and `$w_…` are taken. `__COLUMNS__` may name `eff` (and `fc` under the sorts by flags);
    with `rows`, also `r` (the response) and `q` (its question). Each response has one row in both,
    so the joins change no count or order: they are made only where something reads them (at 1M
    responses they take half of a count's time)."""
    sort = sort if sort in SORT_SQL else DEFAULT_SORT  # as order_by reads it: the CTEs its SQL needs follow
    cte_params = Params("c").update({"evaluation_id": filters.evaluation_id})
    among = cte_params.among(ids) if ids is not None else ""  # the page's ids passed the filters already
    reviewed = cte_params.among(reviewed_ids(con))  # the few overridden responses, named
    ctes = f"WITH {response_results_cte(True, '$evaluation_id', among, reviewed)}"
    joins: list[str] = []
    if sort in ("flags", "needs_review"):  # flags per response of this evaluation (or of the run's latest computed one)
        source = cte_params.bind(flags_evaluation_id(con, filters.evaluation_id) or -1)
        page = f" AND response_id IN ({among})" if among else ""
        ctes += (f", fc AS (SELECT response_id, count(*) AS n_flags FROM flags WHERE evaluation_id = {source}"
                 f"{page} GROUP BY 1)")
        joins.append("LEFT JOIN fc ON fc.response_id = eff.response_id")
    where: list[str] = []
    where_params = Params("w")  # the WHERE clause's, dropped with it for a page's ids
    if filters.provider:
        where.append(f"r.provider = {where_params.bind(filters.provider)}")
    if filters.template:
        where.append(f"eff.template_group = {where_params.bind(filters.template)}")
    if filters.verdict and filters.check == "overall":
        where.append(f"eff.overall = {where_params.bind(filters.verdict)}")
    elif filters.verdict:
        ctes += f", checks_eff AS (WITH {check_results_cte(True, '$evaluation_id')} SELECT * FROM eff_checks)"
        where.append(f"eff.response_id IN (SELECT response_id FROM checks_eff WHERE check_name = "
                     f"{where_params.bind(filters.check)} AND verdict = {where_params.bind(filters.verdict)})")
    if filters.flag:
        source = where_params.bind(flags_evaluation_id(con, filters.evaluation_id) or -1)
        where.append(f"eff.response_id IN (SELECT response_id FROM flags WHERE evaluation_id = {source} "
                     f"AND flag = {where_params.bind(filters.flag)})")
    if filters.override_status == "overridden":
        where.append("EXISTS (SELECT 1 FROM overrides o WHERE o.response_id = eff.response_id)")
    elif filters.override_status == "not_overridden":
        where.append("NOT EXISTS (SELECT 1 FROM overrides o WHERE o.response_id = eff.response_id)")
    elif filters.override_status == "carried":
        where.append(HAS_CARRIED_SQL)
    if filters.paradox:
        paradox = where_params.bind(filters.paradox_regex or load_review_config().paradox_regex())
        where.append(f"eff.overall = 'FAIL' AND regexp_matches(coalesce(r.comment, ''), {paradox}, 'i')")
    terms = search_terms(filters.text or "")
    if terms:
        # A semi-join on this run's rows per term, so each regex runs once per text before any other join.
        run_id = int(fetch_value(con, "SELECT run_id FROM evaluations WHERE evaluation_id = $evaluation_id",
                                 {"evaluation_id": filters.evaluation_id}))
        for term in terms:
            matching = search_index.matching_responses(con, run_id, term, search_pattern(term), where_params)
            where.append(f"eff.response_id IN ({matching})")
    if ids is not None:
        where, where_params = [f"eff.response_id IN ({among})"], Params("w")
    # What reads the response's other columns: the provider and comment filters, carried overrides.
    responses = rows or bool(filters.provider) or filters.paradox or filters.override_status == "carried" or \
        sort in SORTS_READING_RESPONSES
    if rows:
        joins.insert(0, "JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id")
    if responses:
        joins.insert(0, "JOIN responses r ON r.response_id = eff.response_id")
    sql = f"""{ctes}
        SELECT __COLUMNS__
        FROM eff
        {chr(10).join(joins)}
        {"WHERE " + " AND ".join(where) if where else ""}"""
    return sql, cte_params.update(where_params).values


@contextmanager
def reading(con: duckdb.DuckDBPyConnection, filters: TriageFilters) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor for the reads over the whole filtered evaluation (count and order, a queue position):
    the process's local copy of a big run on a PostgreSQL store once it holds the evaluation and its
    flags' (evaluator.queries.local_copy; a text search asks for the run's search index too), else ``con``."""
    source = flags_evaluation_id(con, filters.evaluation_id)
    with local_copy.reading(con, [filters.evaluation_id, source],
                            search=bool(search_terms(filters.text or ""))) as cursor:
        yield cursor


def count(con: duckdb.DuckDBPyConnection, filters: TriageFilters) -> int:
    sql, params = _query(con, filters)
    return int(fetch_value(con, sql.replace("__COLUMNS__", "count(*)"), params))


PAGE_COLUMNS = """r.response_id, r.question_id, r.provider, r.model, r.template, eff.template_group AS template_group,
       q.question, r.answer, r.comment, r.outcome, eff.overall, eff.computed_overall, eff.overridden,
       (SELECT count(*) FROM overrides o WHERE o.response_id = r.response_id) AS n_overrides,
       coalesce(r.retrieval_recorded, true) AS retrieval_recorded"""


def page_and_count(con: duckdb.DuckDBPyConnection, filters: TriageFilters, page_number: int = 1,
                   page_size: int = PAGE_SIZE, sort: str = DEFAULT_SORT) -> tuple[int, int, list[dict[str, Any]]]:
    """(number of matches, page shown, its rows in `sort` order): a page past the end shows the last one.

    One pass over the matches finds both the page's ids and the total (a text search reads
    every answer of the run, so doing it twice would double the wait)."""
    sql, params = _query(con, filters, sort=sort)
    sql = sql.replace("__COLUMNS__", f"eff.response_id, count(*) {OVER_ALL_ROWS} AS total") + \
        f" ORDER BY {order_by(sort)} LIMIT $page_size OFFSET $page_offset"

    def ids_of(number: int) -> list[tuple[int, int]]:
        # Narrow rows (ids) through the sort; the wide columns are read for the page's ids only.
        rows = con.execute(sql, {**params, "page_size": page_size, "page_offset": (number - 1) * page_size}).fetchall()
        return [(int(response_id), int(total)) for response_id, total in rows]

    number = max(page_number, 1)
    found = ids_of(number)
    if found:
        total = found[0][1]
    else:
        total = count(con, filters)
        last = max(1, -(-total // page_size))
        if number > last:
            number = last
            found = ids_of(number) if total else []
    return total, number, _rows(con, filters, [i for i, _ in found], sort)


def _rows(con: duckdb.DuckDBPyConnection, filters: TriageFilters, ids: list[int],
          sort: str = DEFAULT_SORT) -> list[dict[str, Any]]:
    if not ids:
        return []
    sql, params = _query(con, filters, ids, sort, rows=True)
    return query_dicts(con, sql.replace("__COLUMNS__", PAGE_COLUMNS) + f" ORDER BY {order_by(sort)}", params)


@dataclass(frozen=True)
class QueuePosition:
    """Where a response sits among the filtered responses in Triage's order."""

    index: int  # 1-based
    total: int
    previous_id: int | None
    next_id: int | None
    page: int  # the Triage page (at the given page size) that holds this response


def queue_position(con: duckdb.DuckDBPyConnection, filters: TriageFilters, sort: str, response_id: int, *,
                   page_size: int) -> QueuePosition | None:
    """The response's position among those matching `filters`, in Triage's display order for `sort`
    (None when it does not match). One query: row_number, lag and lead over the matches."""
    sql, params = _query(con, filters, sort=sort)
    window = f"OVER (ORDER BY {order_by(sort)})"
    columns = (f"eff.response_id, row_number() {window} AS position, lag(eff.response_id) {window} AS previous_id, "
               f"lead(eff.response_id) {window} AS next_id, count(*) {OVER_ALL_ROWS} AS total")
    row = fetch_one(con, f"SELECT position, total, previous_id, next_id FROM ({sql.replace('__COLUMNS__', columns)}) "
                         "WHERE response_id = $response_id", {**params, "response_id": response_id})
    if row is None:
        return None
    position, total, previous_id, next_id = row
    return QueuePosition(index=int(position), total=int(total),
                         previous_id=None if previous_id is None else int(previous_id),
                         next_id=None if next_id is None else int(next_id),
                         page=(int(position) - 1) // max(page_size, 1) + 1)


def first_id(con: duckdb.DuckDBPyConnection, filters: TriageFilters, sort: str) -> int | None:
    """The first response of the filtered list in `sort` order (where "Review these" starts)."""
    sql, params = _query(con, filters, sort=sort)
    row = fetch_one(con, sql.replace("__COLUMNS__", "eff.response_id") + f" ORDER BY {order_by(sort)} LIMIT 1", params)
    return None if row is None else int(row[0])


def computed_values(con: duckdb.DuckDBPyConnection, evaluation_id: int,
                    response_ids: list[int]) -> dict[str, dict[int, str]]:
    """The evaluation's computed verdicts (not overrides) of these responses: target -> response -> verdict,
    for 'overall' and every check (what "confirm the computed verdict" writes)."""
    ids = Params("id")
    among = ids.among(response_ids)
    rows = con.execute(
        f"""SELECT 'overall', response_id, overall FROM response_results
           WHERE evaluation_id = $evaluation AND response_id IN ({among})
           UNION ALL
           SELECT check_name, response_id, verdict FROM check_results
           WHERE evaluation_id = $evaluation AND response_id IN ({among})""",
        {"evaluation": evaluation_id, **ids.values},
    ).fetchall()
    out: dict[str, dict[int, str]] = {}
    for target, response_id, verdict in rows:
        if verdict is not None:
            out.setdefault(str(target), {})[int(response_id)] = str(verdict)
    return out
