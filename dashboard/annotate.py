"""The Review page's rating form: a reviewer rates one response on a label the run defines.

    render_rating_form(db, run_id, response_id, reviewer)

- `db`: the store path (`dashboard.common.store_path()`); the form opens its own cursors.
- `run_id`, `response_id`: the response shown.
- `reviewer`: who is rating (`dashboard.reviewing.reviewer_identity()[0]`); None shows the form
  disabled, with the current ratings still listed.

Call it OUTSIDE any `with store() as con:` block: a save opens the store for writing, which waits
until this process's readers are done. The save runs in the button's callback (before the page
body reruns), writes one annotation with source='review' and a token kept per press (a retried
press is written once), and says "saved" or what to fix. While another program holds the store
the save waits a moment (SAVE_WAIT_S), then asks to try again; what was typed is kept.
Untrusted text (label names, values, annotators, reasons) is shown inert.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard.common import md, store
from dashboard.fmt import no_none
from dashboard.highlight import inline
from evaluator.review import annotations, pending
from evaluator.review.overrides import OverrideError

SAVE_WAIT_S = 2.0
SCALE_HELP = {"nominal": "pick one", "ordinal": "low to high", "numeric": "a number", "text": "free text"}


def _value_widget(definition: dict[str, Any], key: str, disabled: bool) -> None:
    scale, label = definition["scale"], f"Rating ({SCALE_HELP[definition['scale']]})"
    if scale in ("nominal", "ordinal"):
        st.segmented_control(label, definition["values"], key=key, disabled=disabled,
                             format_func=lambda v: md(annotations.value_shown(definition, v)))
    elif scale == "numeric":
        st.number_input(label, value=None, key=key, disabled=disabled)
    else:
        st.text_area(label, key=key, disabled=disabled)


def _save(db: str, response_id: int, reviewer: str, prefix: str) -> None:
    """Button callback: write the rating; keep what was typed when it cannot be written."""
    label = st.session_state.get(f"{prefix}_label")
    value = st.session_state.get(f"{prefix}_value_{label}")
    reason = st.session_state.get(f"{prefix}_reason", "")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    # Journalled first (evaluator.review.pending), like overrides: a busy store keeps it pending, never lost.
    try:
        token = pending.submit(db, {"kind": "annotation", "response_id": response_id, "reviewer": reviewer,
                                    "label": str(label), "value": value, "reason": reason})
    except OverrideError as exc:
        st.session_state[f"{prefix}_error"] = str(exc)
        return
    outcome = pending.apply(db, [token], timeout_s=SAVE_WAIT_S)[0]
    if outcome.state == "failed":
        st.session_state[f"{prefix}_error"] = outcome.message or "the rating could not be written"
        return
    st.session_state.pop(f"{prefix}_token", None)
    st.session_state.pop(f"{prefix}_error", None)
    st.session_state[f"{prefix}_reason"] = ""
    st.session_state.pop(f"{prefix}_value_{label}", None)
    st.session_state[f"{prefix}_done"] = (
        f"Rating saved: {label} = {value}." if outcome.state == "saved" else
        f"Rating kept as pending: {label} = {value}. Another program is using the store; it is written as "
        "soon as the store is free.")


def render_rating_form(db: str, run_id: int, response_id: int, reviewer: str | None, *, key: str = "rating") -> None:
    """Current ratings of the response by annotator, and a form to add the reviewer's own."""
    with store() as con:
        definitions = annotations.labels(con, run_id)
        current = annotations.current(con, [response_id])[response_id]
    st.subheader("Human ratings")
    if not definitions:
        st.caption("This run defines no labels to rate.")
        return
    if current:
        shown = pd.DataFrame(current)[["label", "annotator", "value", "reason", "source", "created_at"]]
        by_label = {d["label"]: d for d in definitions}  # the file's names for the values ("Mostly Yes (3)")
        shown["value"] = [annotations.value_shown(by_label.get(label, {}), value)
                          for label, value in zip(shown["label"], shown["value"], strict=True)]
        st.dataframe(no_none(shown), hide_index=True, width="stretch")  # no reason reads "—", never "None"
    else:
        st.caption("No ratings yet.")
    by_name = {d["label"]: d for d in definitions}
    disabled = reviewer is None
    if disabled:
        st.caption("Say who you are to add a rating.")
    label = st.selectbox("Label", list(by_name), key=f"{key}_label", disabled=disabled)
    definition = by_name[str(label)]
    if definition["description"]:
        st.caption(inline(definition["description"]))
    _value_widget(definition, f"{key}_value_{label}", disabled)
    st.text_input("Reason (optional)", key=f"{key}_reason", disabled=disabled)
    if f"{key}_error" in st.session_state:
        st.error(inline(st.session_state.pop(f"{key}_error")), icon=":material/error:")
    if f"{key}_done" in st.session_state:
        st.success(inline(st.session_state.pop(f"{key}_done")), icon=":material/check_circle:")
    st.button("Save rating", key=f"{key}_save", disabled=disabled, on_click=_save,
              args=(db, response_id, reviewer or "", key))
