"""Review's queue: the Triage list a response was opened from (`?queue=`), and moving through it.

The queue is Triage's own query string (dashboard.triage_url), so Review asks the same filters,
sort and page size where the response sits (evaluator.queries.triage.queue_position) and "Back
to Triage" opens that very Triage page. An override can take a response out of its queue (a FAIL
queue, overridden to PASS): its last known place is kept for the session, so Next still goes on
from where the reviewer was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import streamlit as st

from dashboard import keys
from dashboard.triage_url import filters_from_query, parse_queue
from evaluator.queries.triage import QueuePosition, queue_position, reading

LAST_PLACES = "review_queue_places"  # session state: {(queue, response id): QueuePosition}


@dataclass(frozen=True)
class Place:
    """Where the response stands in its queue; `position` None when it is not (or no longer) in it."""

    query: dict[str, str]  # the Triage query the queue came from
    position: QueuePosition | None
    left_queue: bool = False  # it was in the queue earlier in this session, an override took it out
    moved: bool = False  # still in the queue, but an override re-sorted it: its place as first seen is kept


def place(con: duckdb.DuckDBPyConnection, queue: str | None, response_id: int) -> Place | None:
    """The response's place in `queue` (the `?queue=` value), or None without a usable queue."""
    if not queue:
        return None
    query = parse_queue(queue)
    parsed = filters_from_query(con, query)
    if parsed is None:
        return None
    filters, sort, page_size = parsed
    with reading(con, filters) as whole:  # a big PostgreSQL run: this process's copy, once it has one
        position = queue_position(whole, filters, sort, response_id, page_size=page_size)
    places = st.session_state.setdefault(LAST_PLACES, {})
    known = places.get((queue, response_id))
    if position is not None:
        if known is not None and _neighbours(known) != _neighbours(position):
            # A sort by verdict (the default "needs a reviewer") moves a response the reviewer just
            # overrode to PASS down the list: Next still goes on from where the reviewer was.
            return Place(query, known, moved=True)
        places[(queue, response_id)] = position
        return Place(query, position)
    return Place(query, known, left_queue=known is not None)


def _neighbours(position: QueuePosition) -> tuple[int, int | None, int | None]:
    return position.index, position.previous_id, position.next_id


def back_params(here: Place | None, run: str, evaluation_id: int) -> dict[str, str]:
    """Query parameters of "Back to Triage": the queue's own Triage page holding this response
    (or its first page), else the run and evaluation only."""
    if here is None:
        return {"run": run, "evaluation": str(evaluation_id)}
    page = here.position.page if here.position is not None else 1
    return {**here.query, "page": str(page)}


def go_to(response_id: int) -> None:
    """Button callback: open another response of the queue (queue and evaluation stay in the URL)."""
    st.query_params["response"] = str(response_id)


def heading(here: Place) -> None:
    """'Response i of N in this queue' and the Previous / Next buttons."""
    position = here.position
    if position is None:
        st.caption("This response is not in the Triage queue it was opened from (its filters no longer match it).")
        return
    if here.left_queue:
        st.caption(f"Response {position.index:,} of {position.total:,} in this queue when you opened it — "
                   "your override took it out of the queue's filters.")
    elif here.moved:
        st.caption(f"Response {position.index:,} of {position.total:,} in this queue when you opened it — "
                   "your override moved it in the queue's order; Next and Previous go on from where you were.")
    else:
        st.markdown(f"**Response {position.index:,} of {position.total:,}** in this queue")
    row = st.container(horizontal=True)
    with row:
        st.button("← Previous", key="queue_previous", shortcut=keys.PREVIOUS, disabled=position.previous_id is None,
                  on_click=go_to, args=(position.previous_id,))
        st.button("Next →", key="queue_next", shortcut=keys.NEXT, disabled=position.next_id is None,
                  on_click=go_to, args=(position.next_id,))


def next_id(here: Place | None) -> int | None:
    return None if here is None or here.position is None else here.position.next_id


def query_of(params: Mapping[str, str]) -> str | None:
    return params.get("queue") or None
