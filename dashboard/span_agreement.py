"""The Agreement page's span section: a flag's highlighted characters against what people marked.

    render_span_agreement(con, run, run_id, evaluation_id)

Figures from evaluator.review.span_labels.agreement (per provider and overall: response-level
precision/recall/balanced accuracy, character precision/recall/F1, annotators' pairwise F1); each
confusion cell links to its responses, listed here with their Review links.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from dashboard import names
from dashboard.common import select_in_url
from dashboard.fmt import percent
from dashboard.span_marks import UNSUPPORTED_TEXT_FLAGS
from evaluator.core.types import FLAG_NAMES
from evaluator.queries import agreement as q
from evaluator.review import span_labels

# Each confusion cell: its link's short label, and what it holds.
CELLS = {"tp": ("Flagged and marked", "the flag was raised and people marked unsupported text"),
         "fp": ("Flagged only", "the flag was raised; people marked nothing unsupported"),
         "fn": ("Missed", "people marked unsupported text; the flag was not raised"),
         "tn": ("Neither", "neither the flag nor people")}
FIGURES = ("precision", "recall", "balanced_accuracy", "char_precision", "char_recall", "char_f1")
LIST_LIMIT = 50


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render_span_agreement(con: Any, run: str, run_id: int, evaluation_id: int | None) -> None:
    st.header("Highlighted text vs what people marked")
    if evaluation_id is None:
        st.info("This run has no evaluation yet: no flag has highlighted anything to compare.")
        return
    raised = q.flags_raised(con, evaluation_id)  # a judge's flag (not a rule's) only where the judge ran
    flags = [f for f in UNSUPPORTED_TEXT_FLAGS if f in FLAG_NAMES or f in raised] + \
        [f for f in FLAG_NAMES if f not in UNSUPPORTED_TEXT_FLAGS]
    flag = select_in_url("Flag", "span_flag", flags, container=st.sidebar)
    if flag is None:
        return
    result = span_labels.agreement(con, run_id, evaluation_id, str(flag))
    overall = result["overall"]
    if not overall["responses"]:
        st.info("No span labels in this run yet: select text of an answer on Review and mark it, or import "
                "people's marks with evaluator import-spans.")
        return
    st.caption("Over the responses someone marked (or said hold nothing unsupported). Characters people "
               "marked benign count neither way.")
    cells = st.columns(5)
    cells[0].metric("Responses marked", f"{overall['responses']:,}")
    cells[1].metric("Balanced accuracy", _figure(overall["balanced_accuracy"]))
    cells[2].metric("Character precision", percent(overall["char_precision"]))
    cells[3].metric("Character recall", percent(overall["char_recall"]))
    cells[4].metric("Character F1", _figure(overall["char_f1"]))
    # Figures as text: a figure that does not exist reads "—", never "None".
    table = pd.DataFrame([{"provider": p["provider"], "responses": p["responses"],
                           "people marked text": p["human_positive"], "flagged": p["flagged"],
                           **{k.replace("_", " "): _figure(p[k]) for k in FIGURES}}
                          for p in [*result["providers"], {**overall, "provider": "(all)"}]])
    st.dataframe(table, hide_index=True, width="stretch")
    links = st.columns(4)
    for column, (cell, (label, meaning)) in zip(links, CELLS.items(), strict=True):
        n = len(overall["cells"][cell])
        column.page_link("pages/agreement.py", label=f"{label}: {n:,}", icon=":material/list:", help=meaning,
                         query_params={"run": run, "evaluation": str(evaluation_id), "span_flag": str(flag),
                                       "span_cell": cell}, disabled=n == 0)
    if result["annotators"]:
        st.caption("Annotators' pairwise character F1, over the responses both marked")
        st.dataframe(pd.DataFrame([{"annotator A": a["annotator_a"], "annotator B": a["annotator_b"],
                                    "responses": a["responses"], "character F1": _figure(a["char_f1"])}
                                   for a in result["annotators"]]), hide_index=True, width="content")
    cell = st.query_params.get("span_cell", "")
    if cell in CELLS:
        ids = overall["cells"][cell]
        st.subheader(f"{CELLS[cell][0]}: {len(ids):,}", anchor="span-cell")
        st.caption(CELLS[cell][1].capitalize() + ".")
        for response_id, question_id, provider in q.response_names(con, ids, limit=LIST_LIMIT):
            head, link = st.columns([6, 1], vertical_alignment="center")
            head.markdown(f"**{names.heading(question_id)[0]}** · {names.heading(provider)[0]}")
            link.page_link("pages/review.py", label="Review", icon=":material/rate_review:",
                           query_params={"response": str(response_id), "evaluation": str(evaluation_id),
                                         "from": "agreement", "from_q": urlencode(st.query_params.to_dict())})
        if len(ids) > LIST_LIMIT:
            st.caption(f"The first {LIST_LIMIT} of {len(ids):,}; evaluator agreement --spans --json lists them all.")
