"""A Triage URL query <-> the Triage queue (filters, sort, page size): the one parser of both pages.

Contract with the Review page:
- Triage's query keys: run, evaluation, provider, template, check, verdict, flag, status, paradox,
  q (the search; `search` is read as an alias), sort, size, view — and page, tab, which the queue
  does not carry. `QUEUE_KEYS` lists those it does (view: "Back to Triage" returns to the same view).
- `filters_from_query(con, query)` -> (TriageFilters, sort, page size), or None when the run is
  unknown (or has no evaluation). Values the page would not offer fall back to what the page shows
  for them ("*" and unknown values: no filter). The Triage page reads its own URL through it, so
  the queue a link carries is exactly the list Triage showed.
- Triage's "Review these" opens Review on the FIRST response of the filtered, sorted list, and
  each card's / row's Review link opens its response, with
  `/review?response=ID&evaluation=EID&queue=<urlencoded Triage query restricted to QUEUE_KEYS>`
  (`review_params`). Review decodes `queue` with `urllib.parse.parse_qsl` (or `parse_queue`) and
  asks `evaluator.queries.triage.queue_position` where the response sits.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode

import duckdb

from evaluator.queries import triage as q

ALL = "*"  # "any value" in the URL, e.g. ?provider=*
VERDICTS = ("FAIL", "PASS", "N/A")
# The Triage state a queue carries: its filters, order and page size, and the view (cards or table)
# "Back to Triage" returns to. Not the page: Back computes the page that holds the response.
QUEUE_KEYS: tuple[str, ...] = ("run", "evaluation", "provider", "template", "check", "verdict", "flag", "status",
                               "paradox", "q", "sort", "size", "view")
SEARCH_ALIAS = "search"


def page_size_from(value: str | None) -> int:
    """?size= when it is one of the offered sizes, else the default."""
    return int(value) if value in {str(s) for s in q.PAGE_SIZES} else q.PAGE_SIZE


def sort_from(value: str | None) -> str:
    return value if value in q.SORTS else q.DEFAULT_SORT


def evaluation_from(con: duckdb.DuckDBPyConnection, run_id: int, value: str | None) -> int | None:
    """?evaluation= when it is one of the run's, else the default one (None: the run has none)."""
    evaluations = q.evaluations_of_run(con, run_id)
    ids = [int(e["evaluation_id"]) for e in evaluations]
    if value is not None and value.strip().isdigit() and int(value) in ids:
        return int(value)
    return q.default_evaluation(evaluations)


def filters_from_query(con: duckdb.DuckDBPyConnection,
                       query: Mapping[str, str]) -> tuple[q.TriageFilters, str, int] | None:
    """(filters, sort, page size) of a Triage URL query; None if the run is unknown or unevaluated."""
    run = query.get("run")
    run_id = q.run_id(con, run) if run else None
    if run_id is None:
        return None
    evaluation_id = evaluation_from(con, run_id, query.get("evaluation"))
    if evaluation_id is None:
        return None
    options = q.filter_options(con, evaluation_id)

    def offered(key: str, values: list[str] | tuple[str, ...]) -> str | None:
        value = query.get(key)
        return value if value is not None and value != ALL and value in values else None

    provider = query.get("provider")
    if not provider or provider == ALL or not q.has_provider(con, evaluation_id, provider):
        provider = None
    status = query.get("status")
    text = query.get("q") or query.get(SEARCH_ALIAS) or None
    filters = q.TriageFilters(
        evaluation_id=evaluation_id,
        provider=provider,
        template=offered("template", options["template"]),
        check=offered("check", options["check"]) or "overall",
        verdict=offered("verdict", VERDICTS),
        flag=offered("flag", options["flag"]),
        override_status=status if status in q.OVERRIDE_STATUSES else "any",
        paradox=query.get("paradox") == "1",
        text=text,
    )
    return filters, sort_from(query.get("sort")), page_size_from(query.get("size"))


def queue_query(query: Mapping[str, str]) -> str:
    """The Triage query restricted to QUEUE_KEYS, urlencoded (the value of Review's `queue=`)."""
    return urlencode([(key, str(query[key])) for key in QUEUE_KEYS if query.get(key) not in (None, "")])


def parse_queue(queue: str) -> dict[str, str]:
    """Review's `queue=` value back into a Triage query mapping."""
    return dict(parse_qsl(queue, keep_blank_values=False))


def review_params(response_id: int, evaluation_id: int, query: Mapping[str, str]) -> dict[str, str]:
    """Query parameters of a Review link for one response of this Triage queue."""
    return {"response": str(response_id), "evaluation": str(evaluation_id), "queue": queue_query(query)}
