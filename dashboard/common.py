"""Sidebar, store access and URL query-string state shared by every page."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import duckdb
import streamlit as st

from dashboard.highlight import INVISIBLE, break_autolinks, inline, inline_html, visible_token
from evaluator.queries import local_copy
from evaluator.queries.runs import run_names
from evaluator.review import pending
from evaluator.store import postgres
from evaluator.store.db import NewerStoreFileError, StoreBusyError, connect, resolve_db, set_waiting

T = TypeVar("T")


def store_path() -> str:
    return str(resolve_db(None))  # a file's path, or a PostgreSQL URL as given


WAIT_STYLE = ("position:fixed; top:3.75rem; left:50%; transform:translateX(-50%); z-index:1000100; max-width:42rem; "
              "padding:0.6rem 1rem; border-radius:0.5rem; background:#e8f0fe; color:#174ea6; "
              "box-shadow:0 2px 8px rgba(0,0,0,0.2); font-size:0.95rem")
PAGE_WAIT_S = 60.0  # then the page reruns itself and waits again: a page never gives up


def waiting_notice(label: str = "This page"):  # type: ignore[no-untyped-def]
    """A progress callback for connect(): one notice that updates itself while we wait."""
    slot = None

    def on_wait(waited: float, holder: str | None) -> None:
        nonlocal slot
        slot = slot or st.empty()
        who = f"<b>{inline_html(holder)}</b>" if holder else "another program"
        # Fixed at the top of the window: a reviewer scrolled down a long page sees it (the page
        # itself is greyed out while it waits).
        slot.html(f'<style>.store-wait {{{WAIT_STYLE}}}</style><div class="store-wait" role="status">'
                  f"⌛ Waiting for the store: {who} is using it ({waited:.0f} s so far). {inline_html(label)} "
                  "carries on by itself as soon as it is free — nothing you typed is lost.</div>")

    def done() -> None:
        if slot is not None:
            slot.empty()

    return on_wait, done


@contextmanager
def store() -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of the dashboard's one store instance for one page run (closed when the last
    browser session is done, so the CLI can write in between). While another process holds the
    store the page shows that it waits, and retries by itself; it never shows an error for it."""
    set_waiting(label="the dashboard")
    pending.start_drainer(store_path())  # reviewers' saves kept while the store was busy
    on_wait, done = waiting_notice()
    # Pages only read: they share the store with each other and with the CLI's reading steps;
    # only a save (evaluator.review.pending) opens it for writing. A missing store is created empty.
    read_only = Path(store_path()).exists()
    try:
        with connect(store_path(), read_only=read_only, timeout_s=PAGE_WAIT_S, on_wait=on_wait,
                     upgrade=True) as con:
            done()
            try:
                local_copy.copy_ahead(con)  # a PostgreSQL store's newest big runs, before a page asks
            except ValueError as exc:  # its setting is not a number: say which and what to give
                st.error(md(str(exc)))
                st.stop()
            yield con
    except StoreBusyError:
        time.sleep(1.0)
        st.rerun()
    except (NewerStoreFileError, postgres.ServerStoreError) as exc:  # nothing a page can do: say what to run
        st.error(md(exc))
        st.stop()


def url_value(key: str, options: Sequence[T], default: T | None = None) -> T | None:
    """The option named in the URL query string, else the default (or the first option)."""
    wanted = st.query_params.get(key)
    for option in options:
        if str(option) == wanted:
            return option
    if default is not None and default in options:
        return default
    return options[0] if options else None


def select_in_url(label: str, key: str, options: Sequence[T], *, default: T | None = None,
                  container: object = None, format_func=str,  # type: ignore[no-untyped-def]
                  say_unknown: bool = True) -> T | None:
    """A selectbox whose value lives in the URL query string, so a view can be shared as a link.

    A value in the URL that is not an option (a run deleted since the link was shared, a typo)
    is said, not silently replaced — unless `say_unknown` is False, for a choice that another
    control of the page makes stale as a matter of course (a flip of another tab or page)."""
    if not options:
        return None
    current = url_value(key, options, default)
    wanted = st.query_params.get(key)
    if say_unknown and wanted is not None and all(str(option) != wanted for option in options):
        st.warning(f"{label} “{inline(wanted)}” (from the link) does not exist here; showing "
                   f"“{inline(str(format_func(current)))}” instead.", icon=":material/link_off:")
    index = list(options).index(current) if current in options else 0
    target = container if container is not None else st
    choice = target.selectbox(label, options, index=index, key=f"url_{key}", format_func=format_func)
    if str(choice) != st.query_params.get(key):
        st.query_params[key] = str(choice)
    return choice


def sidebar_run_picker(con: duckdb.DuckDBPyConnection, *, key: str = "run", label: str = "Run") -> str | None:
    """Store path and run picker in the sidebar; returns the chosen run name (None if the store is empty)."""
    st.sidebar.caption(f"Store: `{postgres.redacted(store_path())}`")
    names = run_names(con)
    if not names:
        st.info("No runs in the store yet. Load one with `python -m evaluator ingest FILE` "
                "or the samples with `make run`.")
        return None
    return select_in_url(label, key, names, container=st.sidebar)


TEMPLATE_LABELS = {"none": "no template"}
_VISIBLE = {code: visible_token(code) for code in INVISIBLE}
MD_SPECIAL = re.compile(r"([\\`*\[\]()!<>#|~$_])")  # Markdown that could turn data into links or markup
OVERRIDES_HELP = "Effective verdict = a reviewer's latest override, else the computed one."


def md(text: object) -> str:
    """A name from the store (run, provider, template, rule set) inside Markdown, shown literally:
    Markdown syntax escaped, invisible characters shown, no URL turned into a link."""
    escaped = MD_SPECIAL.sub(r"\\\1", str(text).translate(_VISIBLE))
    return break_autolinks(escaped)


def code(text: str) -> str:
    """Inline code that no backtick in `text` can close early."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def command(*args: str) -> str:
    """`python -m evaluator ARGS` as inline code to copy: every argument shell-quoted (a run named
    `a b` or `x;rm` is one word), invisible characters shown, never a placeholder."""
    line = " ".join(["python -m evaluator", *(shlex.quote(str(a)) for a in args)])
    return code(line.translate(_VISIBLE))


PREFERRED_RULESETS = ("t3_aware", "legacy")  # what a run is evaluated under when nothing says otherwise


def ruleset_to_add(has: Sequence[str], others: Sequence[str] = ()) -> str | None:
    """A computed rule set to suggest for a run that has the evaluations `has`: one that `others`
    (another run's) has first (t3_aware before legacy before the rest), then t3_aware, then legacy —
    never one the run already has."""
    for name in [*(p for p in PREFERRED_RULESETS if p in others), *others, *PREFERRED_RULESETS]:
        if name != "recorded" and name not in has:
            return name
    return None


def recompute_hint(run: str, has: Sequence[str], others: Sequence[str] = ()) -> str:
    """'Evaluate RUN under R: `python -m evaluator recompute --run RUN --ruleset R`' for a rule set
    the run lacks ('' when it has them all)."""
    ruleset = ruleset_to_add(has, others)
    if ruleset is None:
        return ""
    return (f"Evaluate {md(run)} under {md(ruleset)}: "
            f"{command('recompute', '--run', run, '--ruleset', ruleset)}.")


def overrides_toggle(help_text: str = OVERRIDES_HELP) -> bool:
    """With/without reviewers' overrides, kept in the URL (?overrides=1) so the view can be shared."""
    in_url = st.query_params.get("overrides") == "1"
    on = st.sidebar.toggle("Apply reviewer overrides", value=in_url, key="url_overrides", help=help_text)
    if on != in_url:
        st.query_params["overrides"] = "1" if on else "0"
    return on
