"""Triage (SPEC §8.4): filter a run's responses, see why each failed or was flagged, open one to review.

Filters, sort, page size, view and page number live in the URL query string, so a view can be
shared as a link. The list shown is the one the URL describes: the page reads its filters back
from its own URL through dashboard.triage_url.filters_from_query, as Review does with `?queue=`.
"""

from __future__ import annotations

import math
import shlex

import pandas as pd
import streamlit as st

from dashboard import fmt, names, reviewing, table
from dashboard.common import recompute_hint, select_in_url, sidebar_run_picker, store
from dashboard.highlight import COMPACT_CSS, compact_comment, highlight, inline
from dashboard.shell import served_by_app
from dashboard.triage_url import filters_from_query, review_params
from evaluator.queries import triage as q
from evaluator.review import spans as span_view

served_by_app()

ALL = "*"  # "any value" in the URL, e.g. ?provider=*
VERDICT_OPTIONS = [ALL, "FAIL", "PASS", "N/A"]
VIEWS = {"cards": "Cards", "table": "Table"}
MAX_PAGE = 10**12  # a larger ?page= cannot exist (and would overflow the SQL offset)
SCROLL_FLAG = "triage_scroll_top"  # session state: the bottom "Next →" was pressed
# A constant script (no data in it): brings the reader to the top of the next page.
SCROLL_TOP = """<script>
for (const el of [window.parent.document.querySelector('[data-testid="stMain"]'),
                  window.parent.document.querySelector('[data-testid="stAppViewContainer"]')]) {
  if (el) el.scrollTo({top: 0});
}
window.scrollTo({top: 0});
</script>"""


def _any(label: str):  # type: ignore[no-untyped-def]
    return lambda value: label if value == ALL else str(value)


def _bool_in_url(label: str, key: str, help_text: str) -> bool:
    value = st.sidebar.checkbox(label, value=st.query_params.get(key) == "1", key=f"url_{key}", help=help_text)
    if value and st.query_params.get(key) != "1":
        st.query_params[key] = "1"
    elif not value and key in st.query_params:
        del st.query_params[key]
    return value


def _text_in_url(label: str, key: str) -> str:
    value = st.sidebar.text_input(label, value=st.query_params.get(key, ""), key=f"url_{key}",
                                  placeholder="words in question, answer or comment")
    if value and st.query_params.get(key) != value:
        st.query_params[key] = value
    elif not value and key in st.query_params:
        del st.query_params[key]
    return value


def _go_to(page_number: int, scroll: bool = False) -> None:
    st.query_params["page"] = str(page_number)
    if scroll:
        st.session_state[SCROLL_FLAG] = True


def _pager(total: int, current: int, pages: int, size: int, where: str) -> None:
    first = (current - 1) * size + 1
    last = min(current * size, total)
    left, middle, right = st.columns([1, 4, 1], vertical_alignment="center")
    left.button("← Previous", key=f"prev_{where}", disabled=current <= 1, on_click=_go_to,
                args=(current - 1, where == "bottom"), width="stretch")
    middle.markdown(f"<div style='text-align:center'>Page <b>{current:,}</b> of {pages:,} · "
                    f"responses {first:,}–{last:,} of {total:,}</div>", unsafe_allow_html=True)
    right.button("Next →", key=f"next_{where}", disabled=current >= pages, on_click=_go_to,
                 args=(current + 1, where == "bottom"), width="stretch")


def _question(text: str | None, matches: list[dict]) -> None:
    """The question, with the search's matches highlighted when it has any."""
    if not matches:
        reviewing.question(text)
        return
    # highlight() escapes the text; only its constant class name changes (it is not an answer).
    marked = highlight(text or "", matches).replace('class="answer"', 'class="question-text"', 1)
    reviewing.html(f'<div class="question" style="font-weight:600;margin:0.25rem 0 0.5rem 0">{marked}</div>')


# A constant style sheet (no data in it) for the compact cards (issue 31): slimmer padding and gaps,
# the Review link as a small link. Keyed containers carry the class st-key-<key>.
CARD_CSS = """<style>
[class*="st-key-triage_card_"] { padding: 0.45rem 0.75rem !important; gap: 0.2rem !important; }
[class*="st-key-triage_card_"] [data-testid="stPageLink"] a { padding: 0 0.25rem; min-height: 0; }
[class*="st-key-triage_card_"] [data-testid="stMarkdownContainer"] { margin-bottom: 0 !important; }
[class*="st-key-triage_card_"] [data-testid="stMarkdownContainer"] p { margin-bottom: 0; }
[class*="st-key-triage_card_"] [data-testid="stHorizontalBlock"] { gap: 1rem; }
[class*="st-key-triage_card_"] div.question { margin: 0 0 0.2rem 0 !important; line-height: 1.4; }
""" + COMPACT_CSS + "</style>"


def _card(row: dict, details: dict, evaluation_id: int, shown: dict, search: str | None) -> None:
    response_id = row["response_id"]
    flags = details["flags"]
    with st.container(border=True, key=f"triage_card_{response_id}", gap=None):
        overridden = " :violet-badge[overridden]" if row["n_overrides"] else ""
        # Names from the run file are cut to one short line; the tooltip holds them in full.
        shown_names = [(label, row[key], names.heading(row[key])) for label, key in
                       (("question id", "question_id"), ("provider", "provider"), ("model", "model")) if row[key]]
        qid, provider = shown_names[0][2][0], shown_names[1][2][0]
        model = f" · {shown_names[2][2][0]}" if len(shown_names) > 2 else ""
        full = "\n\n".join(f"{label}: {inline(value)}" for label, value, (_, cut) in shown_names if cut)
        template = f" · {inline(fmt.template(row['template_group']))}"
        head, link = st.columns([6, 1], vertical_alignment="center", gap="small")
        head.markdown(f"**{qid}** · {provider}{model}{template} · "
                      f"{reviewing.badge(row['overall'])}{overridden} {reviewing.flag_badges(flags)}",
                      help=full or None)
        link.page_link("pages/review.py", label="Review", icon=":material/rate_review:",
                       query_params=review_params(response_id, evaluation_id, st.query_params.to_dict()))
        left, right = st.columns([5, 4], gap="medium")
        with left.container(gap=None):
            _question(row["question"], q.search_matches(row["question"], search))
            reviewing.answer(row["answer"], [*details["spans"], *q.search_matches(row["answer"], search)],
                             limit=3000, compact=True)
            if row["comment"]:
                reviewing.html(compact_comment(row["comment"]))
        with right.container(gap=None):
            reviewing.compact_banners(flags, shown["banners"])
            reviewing.compact_checks(details["checks"])
            reviewing.retrieved_details(details["retrieved"], shown["threshold"],
                                        recorded=row["retrieval_recorded"], spans=details["spans"])


# Reviewers' overrides against the evaluator's verdicts; the Human labels page is the annotators' side.
OVERRIDES_TAB = "Reviewer overrides vs evaluator"


def _agreement(con, run: str, evaluation_id: int) -> None:  # type: ignore[no-untyped-def]
    st.subheader(OVERRIDES_TAB)
    st.caption("How often reviewers overturned this evaluation's automated verdicts, per check and template. "
               "It counts **reviewed verdicts only**: a verdict is reviewed once it has an override (confirming "
               "it with the same value counts too). False-failure rate = computed FAIL overturned (to PASS, or "
               "N/A for a check) / computed FAIL reviewed; false-pass rate = computed PASS overturned to FAIL / "
               "computed PASS reviewed. Verdicts nobody reviewed are in neither rate.")
    rows = q.agreement(con, run, evaluation_id)
    if not rows:
        st.info("No overrides yet for this run: nothing to compare the evaluator against.")
    else:
        frame = pd.DataFrame(rows)
        frame["template"] = frame["template"].map(fmt.template)
        frame = fmt.shares(frame, ["false_failure_rate", "false_pass_rate"])
        st.dataframe(fmt.no_none(frame), hide_index=True, width="stretch", column_config={
            "reviewed": "reviewed", "fail_reviewed": "FAIL reviewed", "fail_overturned": "FAIL overturned",
            "false_failure_rate": fmt.percent_column("false-failure rate"),
            "pass_reviewed": "PASS reviewed", "pass_overturned": "PASS overturned",
            "false_pass_rate": fmt.percent_column("false-pass rate"),
        })
    # One page of providers (most responses first), the others summed in one row: 100k providers cost what 20 do.
    n_providers, shown = names.ranked_page(
        "agreement_providers_page",
        lambda limit, offset: q.providers(con, evaluation_id, limit=limit, offset=offset))
    rates = q.pass_rate_page(con, evaluation_id, shown)
    if rates:
        st.caption("Pass rates without and with reviewers' overrides. Unlike the rates above, these count "
                   "**every** response of the provider and template (n), reviewed or not: the share whose "
                   "verdict is PASS, computed, and with overrides (a reviewer's latest override where there is "
                   "one, else the computed verdict). So a template can show a high pass rate with overrides and "
                   "a non-zero false-failure rate at once: the second is over the few reviewed FAILs only.")
        merged = pd.DataFrame(names.label_rows(rates, n_providers - len(shown)))
        merged["template"] = merged["template"].map(fmt.template)
        merged = fmt.shares(merged, ["pass_rate", "pass_rate_effective"])
        st.dataframe(fmt.no_none(merged[["provider", "template", "n", "pass_rate", "pass_rate_effective"]]),
                     hide_index=True, width="stretch", column_config={
                         "n": fmt.count_column("responses"),
                         "pass_rate": fmt.percent_column("computed pass rate"),
                         "pass_rate_effective": fmt.percent_column("with overrides"),
                     })
        names.pager("agreement_providers_page", n_providers)


def _page_number() -> tuple[int, str | None]:
    """The page the URL asks for, and what is wrong with it (None: nothing)."""
    raw = st.query_params.get("page", "1")
    try:
        number = int(raw)
    except ValueError:
        return 1, f"“{inline(names.short(raw, 20))}” is not a page number; showing page 1."
    if number < 1:
        return 1, f"Page {number} does not exist; showing page 1."
    return min(number, MAX_PAGE), None


def _controls() -> str:
    """View, sort and page size (in the URL); returns the view."""
    view_col, sort_col, size_col = st.columns([1, 2, 1])
    view = select_in_url("View", "view", list(VIEWS), container=view_col, format_func=VIEWS.get)
    select_in_url("Sort by", "sort", list(q.SORTS), default=q.DEFAULT_SORT, container=sort_col,
                  format_func=q.SORTS.get)
    select_in_url("Per page", "size", list(q.PAGE_SIZES), default=q.PAGE_SIZE, container=size_col)
    return view or "cards"


def _responses(con, run: str) -> None:  # type: ignore[no-untyped-def]
    if st.session_state.pop(SCROLL_FLAG, False):
        st.html(SCROLL_TOP, unsafe_allow_javascript=True)
    view = _controls()
    parsed = filters_from_query(con, st.query_params.to_dict())
    if parsed is None:  # the run vanished meanwhile
        st.info("This run is no longer in the store.")
        return
    filters, sort, size = parsed
    signature = (run, filters, sort, size)
    if st.session_state.get("triage_filters", signature) != signature:
        st.query_params["page"] = "1"  # new filters, order or page size start at the first page
    st.session_state["triage_filters"] = signature

    requested, problem = _page_number()
    with q.reading(con, filters) as whole:  # a big PostgreSQL run: this process's copy, once it has one
        total, current, rows = q.page_and_count(whole, filters, requested, size, sort)
        first = (rows[0]["response_id"] if current == 1 else q.first_id(whole, filters, sort)) if rows else None
    if problem is None and current != requested:
        problem = f"Page {requested} does not exist; showing the last page ({current})."
    if problem:
        st.warning(problem, icon=":material/info:")
    if st.query_params.get("page") != str(current):
        st.query_params["page"] = str(current)  # the URL says what is shown
    pages = max(1, math.ceil(total / size))
    evaluation_id = filters.evaluation_id
    ids = [row["response_id"] for row in rows]
    # "Review these" beside the count, at the left: the table's hover toolbar takes the right end of the
    # strip above the table, where it would cover a control (issue 31).
    count_row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    count_row.markdown(f"**{total:,}** matching response{'s' if total != 1 else ''}", width="content")
    if not rows:
        st.info("No response matches these filters.")
        return
    if first is not None:
        count_row.page_link("pages/review.py", label="Review these", icon=":material/play_arrow:",
                            query_params=review_params(first, evaluation_id, st.query_params.to_dict()))
    if pages > 1:
        _pager(total, current, pages, size, "top")
    if view == "table":
        _table(con, rows, evaluation_id, (signature, current))
    else:
        details = {"checks": q.checks(con, evaluation_id, ids), "flags": q.flags(con, evaluation_id, ids),
                   "retrieved": q.retrieved(con, ids), "spans": span_view.of(con, evaluation_id, ids)}
        shown = q.display_rules(con, evaluation_id)
        st.html(CARD_CSS)
        for row in rows:
            _card(row, {k: v[row["response_id"]] for k, v in details.items()}, evaluation_id, shown, filters.text)
    if pages > 1 and len(rows) > 5:
        _pager(total, current, pages, size, "bottom")


def _table(con, rows: list[dict], evaluation_id: int, shown_as: object) -> None:  # type: ignore[no-untyped-def]
    ids = [row["response_id"] for row in rows]
    if st.session_state.get("triage_table_for") != shown_as:
        st.session_state[table.TABLE_KEY] = table.NO_SELECTION  # another page or list: nothing selected
    st.session_state["triage_table_for"] = shown_as
    table.messages()
    frame = table.frame(rows, q.checks(con, evaluation_id, ids), q.flags(con, evaluation_id, ids), evaluation_id,
                        st.query_params.to_dict())
    # The hover toolbar of st.dataframe sits in the strip above its top right corner (44 px): this
    # row keeps that strip clear of controls (the pager's Next, "Review these").
    st.space(table.TOOLBAR_ROOM_PX)
    selected = [ids[i] for i in table.show(frame) if 0 <= i < len(ids)]
    table.bulk_panel(con, selected, evaluation_id, q.computed_values(con, evaluation_id, selected) if selected else {})


st.title("Triage")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    run_id = q.run_id(con, run)
    evaluations = q.evaluations_of_run(con, run_id) if run_id is not None else []
    if not evaluations:
        st.info(f"Run {inline(run)} has no evaluation yet. {recompute_hint(run, [])}")
        st.stop()
    labels = {e["evaluation_id"]: q.evaluation_label(e) for e in evaluations}
    evaluation_id = select_in_url("Evaluation (rule set)", "evaluation", list(labels),
                                  default=q.default_evaluation(evaluations), container=st.sidebar,
                                  format_func=labels.get)
    assert evaluation_id is not None and run_id is not None  # the run has evaluations
    chosen: int = evaluation_id
    options = q.filter_options(con, evaluation_id)
    st.sidebar.subheader("Filters")
    # The top providers by responses, plus "type to filter": a run may have 100k of them.
    names.provider_picker(
        "Provider", "provider",
        lambda text, limit: q.providers(con, chosen, limit=limit, contains=text or None),
        lambda name: q.has_provider(con, chosen, name),
        any_value=ALL, any_label="All providers", container=st.sidebar)
    select_in_url("Template", "template", [ALL, *options["template"]], container=st.sidebar,
                  format_func=lambda t: "All templates" if t == ALL else fmt.template(t))
    select_in_url("Verdict of", "check", options["check"], container=st.sidebar,
                  format_func=lambda c: "Overall verdict" if c == "overall" else c)
    select_in_url("Verdict", "verdict", VERDICT_OPTIONS, container=st.sidebar, format_func=_any("Any verdict"))
    select_in_url("Flag", "flag", [ALL, *options["flag"]], container=st.sidebar, format_func=_any("Any flag"))
    select_in_url("Override status", "status", list(q.OVERRIDE_STATUSES), container=st.sidebar,
                  format_func=q.OVERRIDE_STATUSES.get)
    _bool_in_url("Comment says correct, verdict FAIL", "paradox",
                 "Failing responses whose reviewer comment says the model behaved as expected "
                 "(phrases are configurable: EVALUATOR_PARADOX_PHRASES).")
    text = _text_in_url("Search", "q")
    st.sidebar.caption('Put "quoted phrases" in double quotes; every phrase must occur.')
    unindexed = q.missing_search_index(con, run_id) if text.strip() else None
    if unindexed:
        st.sidebar.caption(f"Searching reads all {unindexed:,} answers of this run. A word index makes "
                           "searches several times faster; build it once with:")
        st.sidebar.code(f"python -m evaluator search-index --run {shlex.quote(run)}", language="bash")

    # Tabs bound to the URL (?tab=…) run only the open tab's code: the agreement figures cost
    # as much as a page of responses at 1M and are not needed while triaging.
    responses_tab, agreement_tab = st.tabs(["Responses", OVERRIDES_TAB], key="tab", bind="query-params")
    if responses_tab.open:
        with responses_tab:
            _responses(con, run)
    if agreement_tab.open:
        with agreement_tab:
            _agreement(con, run, evaluation_id)
