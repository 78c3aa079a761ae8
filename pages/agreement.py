"""Agreement: where annotators disagree with each other, and where the evaluator disagrees with them.

Per label, Krippendorff's alpha among annotators and the responses they disagree on most; per
check mapped to a label (default: faithfulness-like -> no_hallucination, PASS at the scale's
midpoint; or typed `check=label>=3`), with a warning where the figures say little (a nearly
constant label, a label of another kind than the check), the confusion matrix
of the check vs the human majority, each cell linking to the responses behind it (listed on this
page, each with its Review link). Everything is aggregated in SQL (evaluator.queries.agreement).
"""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import names
from dashboard.common import overrides_toggle, select_in_url, sidebar_run_picker, store
from dashboard.fmt import percent
from dashboard.highlight import inline
from dashboard.shell import served_by_app
from dashboard.span_agreement import render_span_agreement
from evaluator.queries import agreement as q
from evaluator.review.agreement import LEVELS, VERDICTS, AgreementError
from evaluator.review.annotations import value_shown

served_by_app()

PAGE_SIZE = 20


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _ratings_line(ratings: list[dict], definition: dict) -> str:
    return " · ".join(f"{inline(names.short(r['annotator'], 30))}: **{inline(value_shown(definition, r['value']))}**"
                      for r in ratings)


def _review_link(container, response_id: int, evaluation_id: int | None) -> None:  # type: ignore[no-untyped-def]
    params = {"response": str(response_id)}
    if evaluation_id is not None:
        params["evaluation"] = str(evaluation_id)
    params |= {"from": "agreement", "from_q": urlencode(st.query_params.to_dict())}  # Review leads back here
    container.page_link("pages/review.py", label="Review", icon=":material/rate_review:", query_params=params)


def _response_cards(con, run_id: int, rows: list[dict], label: str, evaluation_id: int | None,  # type: ignore[no-untyped-def]
                    note) -> None:
    definition = next((d for d in q.run_labels(con, run_id) if d["label"] == label), {})
    ratings = q.ratings(con, [r["response_id"] for r in rows], label)
    for row in rows:
        with st.container(border=True):
            head, link = st.columns([6, 1], vertical_alignment="center")
            qid, provider = names.heading(row["question_id"])[0], names.heading(row["provider"])[0]
            head.markdown(f"**{qid}** · {provider}{note(row)}")
            _review_link(link, row["response_id"], evaluation_id)
            given = ratings[row["response_id"]]
            st.markdown(f"{inline(label)}: {_ratings_line(given, definition)}")
            for rating in given:
                if rating["reason"]:
                    st.caption(f"{inline(names.short(rating['annotator'], 30))}: {inline(rating['reason'])}")


def _annotators(con, run_id: int, definitions: list[dict], alphas: list[dict],  # type: ignore[no-untyped-def]
                evaluation_id: int | None) -> None:
    st.header("Where annotators disagree with each other")
    st.caption("Krippendorff's alpha per label (1 = full agreement, 0 = no better than chance). Units are the "
               "responses rated by two or more annotators; a dash means the figure does not exist, and why.")
    table = pd.DataFrame([{
        "label": a["label"], "scale": a["scale"], "annotators": a["annotators"], "rated": a["rated"],
        "units": a["units"], **{level: a["alpha"][level] for level in LEVELS},
        "note": "; ".join(f"{level}: {a['why'][level]}" for level in LEVELS if a["alpha"][level] is None),
    } for a in alphas])
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "rated": st.column_config.NumberColumn("rated responses"),
        **{level: st.column_config.NumberColumn(f"alpha ({level})", format="%.3f") for level in LEVELS}})
    ranked = [d for d in definitions if d["scale"] != "text"]
    if not ranked:
        return
    by_name = {d["label"]: d for d in ranked}
    label = select_in_url("Most disagreed responses on", "label", list(by_name))
    definition = by_name[str(label)]
    total, rows = names.ranked_page(  # type: ignore[arg-type]
        "disagreed_page", lambda limit, offset: q.disagreed_page(con, run_id, definition, limit=limit, offset=offset),
        PAGE_SIZE)
    if not total:
        st.info("The annotators gave every response the same rating on this label.")
        return
    st.caption(f"{total:,} responses with different ratings, widest spread first.")
    _response_cards(con, run_id, rows, definition["label"], evaluation_id,  # type: ignore[arg-type]
                    lambda row: f" · {row['distinct_values']} different ratings")
    _pager("disagreed_page", total)


def _pager(key: str, total: int) -> None:
    pages = max(1, -(-total // PAGE_SIZE))
    if pages > 1:
        st.pagination(pages, key=key)


def _mapping_texts() -> list[str]:
    in_url = st.query_params.get("map", "")
    typed = st.sidebar.text_input(
        "Map checks to labels", value=in_url, key="url_map", placeholder="no_hallucination=faithfulness>=3",
        help="CHECK=LABEL>=N, several separated by ';'. Empty: faithfulness-like labels -> no_hallucination, "
             "PASS at or above the scale's midpoint (relevance is not answerability: no default for it)."
             ).strip()
    if typed != in_url:
        if typed:
            st.query_params["map"] = typed
        else:
            del st.query_params["map"]
    return [t.strip() for t in typed.split(";") if t.strip()]


def _cell_params(run: str, evaluation_id: int, rule: str, verdict: str, human: str) -> dict[str, str]:
    params = {key: st.query_params[key] for key in ("map", "overrides") if key in st.query_params}
    return {**params, "run": run, "evaluation": str(evaluation_id), "cell": f"{verdict}:{human}", "rule": rule}


def _evaluator(con, run: str, run_id: int, evaluation_id: int | None, with_overrides: bool) -> None:  # type: ignore[no-untyped-def]
    st.header("Where the evaluator disagrees with them")
    if evaluation_id is None:
        st.info("This run has no evaluation yet: nothing to compare the annotators with.")
        return
    try:
        mapped = q.mappings(con, run_id, evaluation_id, _mapping_texts())
    except AgreementError as exc:
        st.error(inline(str(exc)), icon=":material/error:")
        return
    if not mapped:
        st.info("No check is mapped to a label of this run. Type a mapping in the sidebar, e.g. "
                "no\\_hallucination=faithfulness>=3.")
        return
    st.caption("Each annotator votes PASS when the rating meets the rule; the majority is the humans' verdict "
               "(a tie has none). N/A verdicts and ties are left out and counted. Click a count for its responses.")
    for human in mapped:
        result = q.check_agreement(con, run_id, evaluation_id, human, with_overrides=with_overrides)
        confusion = result["confusion"]
        with st.container(border=True):
            st.subheader(inline(result["rule"]))
            for caveat in result["caveats"]:
                st.warning(inline(caveat), icon=":material/warning:")
            cells = st.columns(4)
            cells[0].metric("Responses compared", f"{confusion.n:,}")
            cells[1].metric("Cohen's kappa", _figure(confusion.kappa()))
            cells[2].metric("Precision of FAIL", percent(confusion.precision()))
            cells[3].metric("Recall of FAIL", percent(confusion.recall()))
            header = st.columns(3)
            header[1].markdown("**Humans PASS**")
            header[2].markdown("**Humans FAIL**")
            for verdict in VERDICTS:
                row = st.columns(3)
                row[0].markdown(f"**Check {verdict}**")
                for column, person in zip(row[1:], VERDICTS, strict=True):
                    n = confusion.cell(verdict, person)
                    column.page_link("pages/agreement.py", label=f"{n:,}", icon=":material/list:",
                                     query_params=_cell_params(run, evaluation_id, result["rule"], verdict, person),
                                     disabled=n == 0, help=f"check {verdict}, humans {person}")
            st.caption(f"Left out: {result['not_applicable']:,} N/A verdicts, {result['ties']:,} ties among "
                       "annotators.")
    _cell_list(con, run_id, evaluation_id, with_overrides, mapped)


def _cell_list(con, run_id: int, evaluation_id: int, with_overrides: bool, mapped: list) -> None:  # type: ignore[no-untyped-def]
    cell, rule = st.query_params.get("cell", ""), st.query_params.get("rule", "")
    human = next((m for m in mapped if str(m.mapping) == rule), None)
    verdict, _, person = cell.partition(":")
    if human is None or verdict not in VERDICTS or person not in VERDICTS:
        return
    st.subheader(f"Check {verdict}, humans {person}: {inline(rule)}", anchor="cell")
    total, rows = names.ranked_page(  # type: ignore[arg-type]
        "cell_page", lambda limit, offset: q.cell_page(con, run_id, evaluation_id, human, verdict, person,
                                                       with_overrides=with_overrides, limit=limit, offset=offset),
        PAGE_SIZE)
    if not total:
        st.info("No response in this cell.")
        return
    st.caption(f"{total:,} responses.")
    _response_cards(con, run_id, rows, human.mapping.label, evaluation_id, lambda row: "")  # type: ignore[arg-type]
    _pager("cell_page", total)


st.title("Human labels")
with store() as con:
    run = sidebar_run_picker(con)
    if not run:
        st.stop()
    run_id = q.run_id(con, run)
    if run_id is None:
        st.stop()
    evaluations = q.evaluations(con, run_id)
    evaluation_id = select_in_url(
        "Evaluation (rule set)", "evaluation", [e["evaluation_id"] for e in evaluations], container=st.sidebar,
        format_func=lambda eid: next(f"{e['ruleset']} · #{eid}" for e in evaluations if e["evaluation_id"] == eid))
    definitions = q.run_labels(con, run_id)
    if not definitions:
        st.info("This run has no human labels yet. Importers bring annotators' ratings in at ingest "
                "(InspectorRAGet); reviewers rate responses on the Review page once a run defines labels.")
        render_span_agreement(con, run, run_id, evaluation_id)
        st.stop()
    with_overrides = overrides_toggle()
    alphas = [q.label_alpha(con, run_id, d) for d in definitions]
    _annotators(con, run_id, definitions, alphas, evaluation_id)
    _evaluator(con, run, run_id, evaluation_id, with_overrides)
    render_span_agreement(con, run, run_id, evaluation_id)
