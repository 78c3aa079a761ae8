"""Triage (SPEC §8.4): filter a run's responses, see why each failed or was flagged, open one to review.

Filters and the page number live in the URL query string, so a view can be shared as a link.
"""

from __future__ import annotations

import math
import shlex

import pandas as pd
import streamlit as st

from dashboard import names, reviewing
from dashboard.common import select_in_url, sidebar_run_picker, store
from dashboard.highlight import inline
from dashboard.shell import served_by_app
from evaluator.queries import triage as q

served_by_app()

ALL = "*"  # "any value" in the URL, e.g. ?provider=*
VERDICT_OPTIONS = [ALL, "FAIL", "PASS", "N/A"]


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


def _go_to(page_number: int) -> None:
    st.query_params["page"] = str(page_number)


def _pager(total: int, current: int, pages: int, where: str) -> None:
    first = (current - 1) * q.PAGE_SIZE + 1
    last = min(current * q.PAGE_SIZE, total)
    left, middle, right = st.columns([1, 4, 1], vertical_alignment="center")
    left.button("← Previous", key=f"prev_{where}", disabled=current <= 1, on_click=_go_to, args=(current - 1,),
                width="stretch")
    middle.markdown(f"<div style='text-align:center'>Page <b>{current}</b> of {pages} · "
                    f"responses {first}–{last} of {total}</div>", unsafe_allow_html=True)
    right.button("Next →", key=f"next_{where}", disabled=current >= pages, on_click=_go_to, args=(current + 1,),
                 width="stretch")


def _card(row: dict, details: dict, evaluation_id: int, shown: dict) -> None:
    response_id = row["response_id"]
    flags = details["flags"]
    with st.container(border=True):
        overridden = " :violet-badge[overridden]" if row["n_overrides"] else ""
        # Names from the run file are cut to one short line; the tooltip holds them in full.
        shown_names = [(label, row[key], names.heading(row[key])) for label, key in
                       (("question id", "question_id"), ("provider", "provider"), ("model", "model")) if row[key]]
        qid, provider = shown_names[0][2][0], shown_names[1][2][0]
        model = f" · {shown_names[2][2][0]}" if len(shown_names) > 2 else ""
        full = "\n\n".join(f"{label}: {inline(value)}" for label, value, (_, cut) in shown_names if cut)
        template = f" · {inline(row['template_group'])}" if row["template_group"] != "none" else ""
        head, link = st.columns([6, 1], vertical_alignment="center")
        head.markdown(f"**{qid}** · {provider}{model}{template} · "
                      f"{reviewing.badge(row['overall'])}{overridden} {reviewing.flag_badges(flags)}",
                      help=full or None)
        link.page_link("pages/review.py", label="Review", icon=":material/rate_review:",
                       query_params={"response": str(response_id), "evaluation": str(evaluation_id)})
        left, right = st.columns([3, 2], gap="medium")
        with left:
            reviewing.question(row["question"])
            reviewing.banners(flags, shown["banners"])
            reviewing.answer(row["answer"], details["spans"], limit=3000)
            if row["comment"]:
                reviewing.labelled("Reviewer comment", row["comment"], muted=True)
        with right:
            reviewing.checks(details["checks"])
            with st.expander(f"Retrieved items ({len(details['retrieved'])})"):
                reviewing.retrieved(details["retrieved"], shown["threshold"])


def _agreement(con, run: str, evaluation_id: int) -> None:  # type: ignore[no-untyped-def]
    st.subheader("Evaluator agreement")
    st.caption("How often reviewers overturned this evaluation's automated verdicts, per check and template. "
               "A verdict counts as reviewed once it has an override (confirming one with the same value counts "
               "too). False-failure rate = computed FAIL overturned (to PASS, or N/A for a check) / computed "
               "FAIL reviewed; false-pass rate = computed PASS overturned to FAIL / computed PASS reviewed.")
    percent = {"format": "percent"}
    rows = q.agreement(con, run, evaluation_id)
    if not rows:
        st.info("No overrides yet for this run: nothing to compare the evaluator against.")
    else:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
            "reviewed": "reviewed", "fail_reviewed": "FAIL reviewed", "fail_overturned": "FAIL overturned",
            "false_failure_rate": st.column_config.NumberColumn("false-failure rate", **percent),
            "pass_reviewed": "PASS reviewed", "pass_overturned": "PASS overturned",
            "false_pass_rate": st.column_config.NumberColumn("false-pass rate", **percent),
        })
    # One page of providers (most responses first), the others summed in one row: 100k providers cost what 20 do.
    n_providers, shown = names.ranked_page(
        "agreement_providers_page",
        lambda limit, offset: q.providers(con, evaluation_id, limit=limit, offset=offset))
    rates = q.pass_rate_page(con, evaluation_id, shown)
    if rates:
        st.caption("Pass rates without and with reviewers' overrides")
        merged = pd.DataFrame(names.label_rows(rates, n_providers - len(shown)))
        st.dataframe(merged[["provider", "template", "n", "pass_rate", "pass_rate_effective"]],
                     hide_index=True, width="stretch", column_config={
                         "n": "responses",
                         "pass_rate": st.column_config.NumberColumn("computed pass rate", **percent),
                         "pass_rate_effective": st.column_config.NumberColumn("with overrides", **percent),
                     })
        names.pager("agreement_providers_page", n_providers)


def _responses(con, filters: q.TriageFilters, evaluation_id: int) -> None:  # type: ignore[no-untyped-def]
    try:
        requested = int(st.query_params.get("page", "1"))
    except ValueError:
        requested = 1
    total, current, rows = q.page_and_count(con, filters, requested)
    pages = max(1, math.ceil(total / q.PAGE_SIZE))
    ids = [row["response_id"] for row in rows]
    details = {"checks": q.checks(con, evaluation_id, ids), "flags": q.flags(con, evaluation_id, ids),
               "retrieved": q.retrieved(con, ids), "spans": q.spans(con, evaluation_id, ids)}
    shown = q.display_rules(con, evaluation_id)
    st.markdown(f"**{total}** matching response{'s' if total != 1 else ''}")
    if not rows:
        st.info("No response matches these filters.")
    else:
        if pages > 1:
            _pager(total, current, pages, "top")
        for row in rows:
            _card(row, {k: v[row["response_id"]] for k, v in details.items()}, evaluation_id, shown)
        if pages > 1 and len(rows) > 5:
            _pager(total, current, pages, "bottom")


st.title("Triage")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    run_id = q.run_id(con, run)
    evaluations = q.evaluations_of_run(con, run_id) if run_id is not None else []
    if not evaluations:
        st.info(f"Run {inline(run)} has no evaluation yet: "
                "`python -m evaluator recompute --run RUN --ruleset t3_aware`.")
        st.stop()
    labels = {e["evaluation_id"]: q.evaluation_label(e) for e in evaluations}
    evaluation_id = select_in_url("Evaluation (rule set)", "evaluation", list(labels),
                                  default=q.default_evaluation(evaluations), container=st.sidebar,
                                  format_func=labels.get)
    options = q.filter_options(con, evaluation_id)
    st.sidebar.subheader("Filters")
    # The top providers by responses, plus "type to filter": a run may have 100k of them.
    provider = names.provider_picker(
        "Provider", "provider",
        lambda text, limit: q.providers(con, evaluation_id, limit=limit, contains=text or None),
        lambda name: q.has_provider(con, evaluation_id, name),
        any_value=ALL, any_label="All providers", container=st.sidebar)
    template = select_in_url("Template", "template", [ALL, *options["template"]], container=st.sidebar,
                             format_func=_any("All templates"))
    check = select_in_url("Verdict of", "check", options["check"], container=st.sidebar,
                          format_func=lambda c: "Overall verdict" if c == "overall" else c)
    verdict = select_in_url("Verdict", "verdict", VERDICT_OPTIONS, container=st.sidebar,
                            format_func=_any("Any verdict"))
    flag = select_in_url("Flag", "flag", [ALL, *options["flag"]], container=st.sidebar, format_func=_any("Any flag"))
    status = select_in_url("Override status", "status", list(q.OVERRIDE_STATUSES), container=st.sidebar,
                           format_func=q.OVERRIDE_STATUSES.get)
    paradox = _bool_in_url("Comment says correct, verdict FAIL", "paradox",
                           "Failing responses whose reviewer comment says the model behaved as expected "
                           "(phrases are configurable: EVALUATOR_PARADOX_PHRASES).")
    text = _text_in_url("Search", "q")
    unindexed = q.missing_search_index(con, run_id) if text.strip() else None
    if unindexed:
        st.sidebar.caption(f"Searching reads all {unindexed:,} answers of this run. A word index makes "
                           "searches several times faster; build it once with:")
        st.sidebar.code(f"python -m evaluator search-index --run {shlex.quote(run)}", language="bash")
    filters = q.TriageFilters(
        evaluation_id=evaluation_id,
        provider=None if provider == ALL else provider,
        template=None if template == ALL else template,
        check=check or "overall",
        verdict=None if verdict == ALL else verdict,
        flag=None if flag == ALL else flag,
        override_status=status or "any",
        paradox=paradox,
        text=text or None,
    )
    signature = (run, filters)
    if st.session_state.get("triage_filters", signature) != signature:
        st.query_params["page"] = "1"  # new filters start at the first page
    st.session_state["triage_filters"] = signature

    # Tabs bound to the URL (?tab=…) run only the open tab's code: the agreement figures cost
    # as much as a page of responses at 1M and are not needed while triaging.
    responses_tab, agreement_tab = st.tabs(["Responses", "Evaluator agreement"], key="tab", bind="query-params")
    if responses_tab.open:
        with responses_tab:
            _responses(con, filters, evaluation_id)
    if agreement_tab.open:
        with agreement_tab:
            _agreement(con, run, evaluation_id)
