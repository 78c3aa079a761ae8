"""Triage's compact table view (one row per response) and its bulk actions on the selected rows.

Cells are plain text in st.dataframe (never HTML), so untrusted names stay inert. Each row links
to Review with the Triage queue (dashboard.triage_url). Bulk actions go through the pending
journal as ONE save holding every row's override (evaluator.review.pending, kind "bulk"): one
transaction, written exactly once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import duckdb
import pandas as pd
import streamlit as st

from dashboard import fmt, highlight, names, reviewing
from dashboard.common import store_path
from dashboard.triage_url import review_params
from evaluator.review import pending
from evaluator.review.config import load_review_config
from evaluator.review.overrides import OverrideError, allowed_values, targets_for

TABLE_KEY = "triage_table"  # session state: the table's row selection
NO_SELECTION: dict[str, Any] = {"selection": {"rows": [], "columns": [], "cells": []}}
ACTIONS = {"confirm": "Confirm the computed verdict", "set": "Override to a value"}
SAVE_WAIT_S = 2.0  # then the save stays pending (never lost) and the background writer lands it


TOOLBAR_ROOM_PX = 16  # with the gaps on either side (16 px each), clears the 44 px the hover toolbar takes
QUESTION_CHARS = 80  # the question, cut to one line of the table; Review shows it whole


def target_label(target: str) -> str:
    return "Overall verdict" if target == "overall" else target


def frame(rows: Sequence[Mapping[str, Any]], checks: Mapping[int, list[dict[str, Any]]],
          flags: Mapping[int, list[dict[str, Any]]], evaluation_id: int, query: Mapping[str, str]) -> pd.DataFrame:
    """One row per response, in the page's order."""
    records = []
    for row in rows:
        response_id = int(row["response_id"])
        failing = [c["check"] for c in checks.get(response_id, []) if c["verdict"] == "FAIL"]
        records.append({
            "review": "./review?" + urlencode(review_params(response_id, evaluation_id, query)),
            "question id": row["question_id"],
            "question": names.short(row["question"], QUESTION_CHARS),
            "provider": row["provider"],
            "template": fmt.template(row["template_group"]),
            "verdict": row["overall"] or fmt.MISSING,
            "failing checks": ", ".join(failing),
            "flags": ", ".join(f["flag"] for f in flags.get(response_id, [])),
            "overridden": bool(row["n_overrides"]),
        })
    # Review first: long flag or check names never push it off-screen.
    columns = ["review", "question id", "question", "provider", "template", "verdict", "failing checks", "flags",
               "overridden"]
    return pd.DataFrame.from_records(records, columns=columns)


def show(table: pd.DataFrame) -> list[int]:
    """The table with multi-row selection; returns the selected row positions."""
    event = st.dataframe(
        table, key=TABLE_KEY, on_select="rerun", selection_mode="multi-row", hide_index=True, width="stretch",
        column_config={
            "overridden": st.column_config.CheckboxColumn("overridden"),
            "review": st.column_config.LinkColumn("review", display_text="Review →",
                                                  help="Open in Review, with this list as its queue"),
        },
    )
    return [int(i) for i in event.selection.rows]


def _save(save: dict[str, Any]) -> None:
    """Keep the bulk save durably, then write it if the store frees within a moment."""
    try:
        token = pending.submit(store_path(), save)
    except OverrideError as exc:
        st.session_state["bulk_error"] = str(exc)
        return
    outcome = pending.apply(store_path(), [token], timeout_s=SAVE_WAIT_S)[0]
    n = len(save["overrides"])
    what = f"{target_label(save['target'])} of {n} response{'s' if n != 1 else ''}"
    if outcome.state == "failed":
        st.session_state["bulk_error"] = f"Not saved ({what}): {outcome.message}"
        return
    if outcome.state == "pending":
        st.session_state["bulk_done"] = (f"Kept as pending: {what}. Another program is using the store; it is "
                                         "written as soon as the store is free.")
    else:
        st.session_state["bulk_done"] = f"Saved {len(outcome.override_ids)} overrides: {what}."
    st.session_state[TABLE_KEY] = NO_SELECTION  # rows may move (a sort by verdict): select afresh
    st.session_state["bulk_reason"] = ""


def _apply(ids: list[int], evaluation_id: int, reviewer: str, computed: dict[str, dict[int, str]]) -> None:
    """Button callback: the chosen action on every selected response, one save."""
    action = st.session_state.get("bulk_action", "confirm")
    target = str(st.session_state.get("bulk_target") or "overall")
    if action == "confirm":
        items = [{"response_id": i, "target": target, "new_value": computed.get(target, {})[i]}
                 for i in ids if i in computed.get(target, {})]
        if not items:
            st.session_state["bulk_error"] = f"None of the selected responses has a computed {target} verdict."
            return
    else:
        value = st.session_state.get(f"bulk_value_{target}") or ""
        items = [{"response_id": i, "target": target, "new_value": value} for i in ids]
    _save({"kind": "bulk", "overrides": items, "target": target, "reason": st.session_state.get("bulk_reason", ""),
           "reviewer": reviewer, "evaluation_id": evaluation_id})


def messages() -> None:
    """What the last bulk action did (kept across the rerun its button caused)."""
    if "bulk_done" in st.session_state:
        # plain text: the check name comes from the run file
        st.success(highlight.inline(st.session_state.pop("bulk_done")), icon=":material/check_circle:")
    if "bulk_error" in st.session_state:
        st.error(highlight.inline(st.session_state.pop("bulk_error")), icon=":material/error:")


def bulk_panel(con: duckdb.DuckDBPyConnection, ids: list[int], evaluation_id: int,
               computed: dict[str, dict[int, str]]) -> None:
    """Confirm or override one target of the selected responses, with one reason."""
    if not ids:
        st.caption("Select rows (the boxes at the left of the table) to confirm or override them together.")
        return
    n = len(ids)
    st.markdown(f"**{n} selected** — bulk action")
    reviewer = reviewing.identity_panel(load_review_config())
    if reviewer is None:
        return
    action = st.radio("Action", list(ACTIONS), key="bulk_action", horizontal=True, format_func=ACTIONS.get)
    # Only what the bot's profile applies: a check that is always N/A for this bot is not offered.
    # Only what every selected response can take: one target, one transaction for all of them.
    common = set.intersection(*(set(targets_for(con, i, applicable_only=True)) for i in ids))
    targets = [t for t in targets_for(con, ids[0], applicable_only=True) if t in common and t != "refused"]
    target = st.selectbox("What to override", targets, key="bulk_target", format_func=target_label)
    if action == "set":
        st.radio("New value", allowed_values(target), key=f"bulk_value_{target}", horizontal=True)
    else:
        values = [computed.get(target, {}).get(i) for i in ids]
        counts = {v: values.count(v) for v in dict.fromkeys(v for v in values if v)}
        st.caption("Computed: " + (", ".join(f"{v} × {c}" for v, c in counts.items()) or "none") +
                   " — each response gets an override with its own computed value.")
    st.text_input("Reason (required)", key="bulk_reason", placeholder="e.g. refusals need no citation")
    st.button(f"Apply to {n} response{'s' if n != 1 else ''}", type="primary", key="bulk_apply", on_click=_apply,
              args=(ids, evaluation_id, reviewer, computed))
