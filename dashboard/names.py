"""Names a run file chooses (providers, question ids) on a page, bounded whatever the file holds.

A run may have 100k providers, or names of 10 kB. Pages therefore draw the top TOP_N
providers (most responses first) in a chart, summarise the rest in one line ("and N more"),
page tables in SQL, offer a provider filter as the top names plus "type to filter", and show
long names shortened (the full text stays in the table cell or the tooltip). Text shown here
is untrusted: Markdown goes through highlight.inline, chart labels through chart_labels
and dashboard.charts (which escapes them for Plotly).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import streamlit as st

from dashboard.highlight import inline

TOP_N = 20  # providers drawn one by one in a chart, and per page of a provider table / filter
NAME_WIDTH = 40  # characters of a name in a chart, a heading or an option


def short(name: object, width: int = NAME_WIDTH) -> str:
    """The name on one line, cut to `width` characters when longer: its start, '…' and its end
    (names often differ only at the end: 'provider-…-0001', 'provider-…-0002')."""
    text = " ".join(str(name).split()) if name is not None else ""
    if len(text) <= width:
        return text
    tail = (width - 1) // 3
    return text[: width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def is_short(name: object, width: int = NAME_WIDTH) -> bool:
    return short(name, width) == str(name)


def rest_label(n: int, noun: str = "provider") -> str:
    """The one line that stands for the names not shown."""
    return f"… and {n:,} more {noun}{'s' if n != 1 else ''}"


def chart_labels(names: Iterable[str | None], rest: int = 0, noun: str = "provider") -> dict[str | None, str]:
    """Distinct short labels for a chart: name -> label, None -> the rest's label (when rest > 0).

    Labels are raw text: Plotly reads a few HTML tags in labels (<b>, <a href>, <br>), so they
    enter a chart only through dashboard.charts, which escapes them. Two names cut to the same
    text get a number."""
    out: dict[str | None, str] = {}
    used: set[str] = set()
    wanted: list[tuple[str | None, str]] = [(n, short(n)) for n in names if n is not None]
    if rest:
        wanted.append((None, rest_label(rest, noun)))
    for name, label in wanted:
        candidate, k = label, 1
        while candidate in used:
            k += 1
            candidate = f"{label} ({k})"
        used.add(candidate)
        out[name] = candidate
    return out


def heading(name: object, width: int = NAME_WIDTH) -> tuple[str, str | None]:
    """(Markdown of the shortened name, tooltip Markdown with the full name or None when not cut)."""
    text = str(name or "")
    if is_short(text, width):
        return inline(text), None
    return inline(short(text, width)), inline(text)


def page_number(key: str, total: int, page_size: int = TOP_N) -> tuple[int, int]:
    """(page, pages) of a table paged by `key` (its st.pagination widget below the table; 1-based)."""
    pages = max(1, -(-total // page_size))
    current = int(st.session_state.get(key, 1) or 1)
    if current > pages:
        st.session_state[key] = current = pages
    return current, pages


def ranked_page(key: str, fetch: Callable[[int, int], tuple[int, list[str]]],
                page_size: int = TOP_N) -> tuple[int, list[str]]:
    """(how many names, the names of the page the pager `key` is on): fetch(limit, offset) -> (total, names)
    is one ranked query; a page past the end (fewer names than before) shows the last one."""
    requested = max(1, int(st.session_state.get(key, 1) or 1))
    total, page = fetch(page_size, (requested - 1) * page_size)
    if not page and total:
        last = -(-total // page_size)
        st.session_state[key] = last
        total, page = fetch(page_size, (last - 1) * page_size)
    return total, page


def pager(key: str, total: int, page_size: int = TOP_N, noun: str = "provider") -> None:
    """The pagination widget of a provider-paged table, with 'providers 21–40 of 100,000'."""
    current, pages = page_number(key, total, page_size)
    if pages > 1:
        st.pagination(pages, key=key)
        first = (current - 1) * page_size + 1
        st.caption(f"{noun.capitalize()}s {first:,}–{min(current * page_size, total):,} of {total:,}, "
                   f"most responses first.")


def name_filter(key: str, *, label: str = "Filter providers", container: Any = None) -> str:
    """A 'type to filter' box (case-insensitive substring), kept in the URL (?{key}=…)."""
    target = container if container is not None else st
    in_url = st.query_params.get(key, "")
    widget, seen = f"url_{key}", f"url_seen_{key}"
    # The URL wins when it changed since the last run (a shared link): a text box keeps its own
    # state across runs and would otherwise ignore it.
    if widget not in st.session_state or in_url != st.session_state.get(seen, in_url):
        st.session_state[widget] = in_url
    value = target.text_input(label, key=widget, placeholder="type to filter").strip()
    if value and value != in_url:
        st.query_params[key] = value
    elif not value and key in st.query_params:
        del st.query_params[key]
    st.session_state[seen] = value
    return value


def provider_picker(
    label: str, key: str, search: Callable[[str, int], tuple[int, list[str]]], exists: Callable[[str], bool], *,
    any_value: str, any_label: str, container: Any = None, limit: int = TOP_N,
) -> str:
    """A provider filter whose value lives in the URL (?{key}=NAME; any_value = no filter).

    search(text, limit) -> (how many providers match `text`, the first `limit` of them, most responses
    first). With at most `limit` providers it is a plain selectbox; with more, the selectbox offers the
    top `limit` (or those matching the 'type to filter' box above it) and the provider in the URL."""
    target = container if container is not None else st
    total, names = search("", limit)
    typed = ""
    if total > limit:
        typed = name_filter(f"{key}_filter", label=f"{label}: type to filter", container=target)
        if typed:
            total, names = search(typed, limit)
    current = st.query_params.get(key, any_value)
    options: list[str] = [any_value, *names]
    if current != any_value and current not in options:
        if exists(current):
            options.append(current)
        else:
            current = any_value
    choice = target.selectbox(label, options, index=options.index(current), key=f"url_{key}",
                              format_func=lambda v: any_label if v == any_value else short(v))
    if str(choice) != st.query_params.get(key):
        st.query_params[key] = str(choice)
    if total > len(names):
        matching = f"matching “{inline(short(typed, 20))}”" if typed else "in this run"
        target.caption(f"{len(names):,} of {total:,} providers {matching} listed, most responses first; "
                       "type to filter.")
    return str(choice)


def label_rows(rows: Sequence[dict[str, Any]], rest: int, column: str = "provider",
               noun: str = "provider") -> list[dict[str, Any]]:
    """Rows with the rest rows' provider (None, or NaN from a DataFrame) replaced by the 'and N more'
    line (N = `rest`, the providers not shown), for a table."""
    def missing(value: Any) -> bool:
        return value is None or value != value  # NaN is not equal to itself

    return [{**r, column: rest_label(rest, noun)} if missing(r.get(column)) else r for r in rows]
