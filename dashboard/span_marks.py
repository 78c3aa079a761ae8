"""The Review page's span marking: a reviewer selects text of the answer and marks it unsupported
or benign, or marks a highlighted span as a false alarm, or says nothing in it is unsupported.

    render_span_marks(db, response_id, answer, flagged, reviewer)

- `flagged`: the computed spans to show and offer as false alarms ({start, end, text, kind}).
- The answer is drawn by a small custom component (st.components.v2): the text goes in as
  `textContent` (inert), computed spans highlighted, people's marks underlined; a selection inside
  it is reported as character offsets (code points, as Python counts them, not the browser's UTF-16
  units). Saves go through the journal (evaluator.review.pending, kind "span_label"), like ratings.

Call it OUTSIDE any `with store() as con:` block: a save opens the store for writing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import names
from dashboard.common import store
from dashboard.highlight import inline
from evaluator.core.registry import FLAG
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG
from evaluator.review import pending, span_labels
from evaluator.review.overrides import OverrideError
from evaluator.review.span_agreement import kind

SAVE_WAIT_S = 2.0
# The flags whose spans say "this text is not supported": a reviewer may mark one a false alarm.
UNSUPPORTED_TEXT_FLAGS = (FLAG.potential_hallucination, FLAG.unsupported_claim, SPAN_FLAG)

_HTML = '<div class="answer" data-testid="span-marker-answer"></div>'
_CSS = """
.answer { white-space: pre-wrap; line-height: 1.6; padding: 0.5rem 0.75rem; border-radius: 0.5rem;
          border: 1px solid rgba(128, 128, 128, 0.35); user-select: text; cursor: text; }
.answer mark { background: rgba(255, 196, 0, 0.45); color: inherit; }
.answer .human { text-decoration: underline wavy rgb(220, 38, 38); text-underline-offset: 3px; }
.answer .benign { text-decoration: underline dotted rgb(100, 116, 139); text-underline-offset: 3px; }
"""
_JS = (Path(__file__).with_name("span_marker.js")).read_text(encoding="utf-8")
_marker = st.components.v2.component("span_marker", html=_HTML, css=_CSS, js=_JS, isolate_styles=False)


def _save(db: str, response_id: int, reviewer: str, start: int | None, end: int | None, label: str | None,
          prefix: str, text: str = "") -> None:
    try:
        token = pending.submit(db, {"kind": "span_label", "response_id": response_id, "reviewer": reviewer,
                                    "start": start, "end": end, "label": label})
    except OverrideError as exc:
        st.session_state[f"{prefix}_error"] = str(exc)
        return
    outcome = pending.apply(db, [token], timeout_s=SAVE_WAIT_S)[0]
    if outcome.state == "failed":
        st.session_state[f"{prefix}_error"] = outcome.message or "the mark could not be written"
        return
    st.session_state.pop(f"{prefix}_error", None)
    what = "nothing unsupported" if start is None else f"{label.replace('_', ' ')}: “{text}”"
    st.session_state[f"{prefix}_done"] = (f"Marked {what}." if outcome.state == "saved" else
                                          f"Kept as pending: {what}. Another program is using the store; it is "
                                          "written as soon as the store is free.")


def render_span_marks(db: str, response_id: int, answer: str, flagged: list[dict[str, Any]],
                      reviewer: str | None, *, key: str = "span_marks") -> None:
    with store() as con:
        marks = span_labels.marks(con, [response_id]).get(response_id, [])
    st.subheader("Unsupported text")
    st.caption("Select text of the answer, then mark it. Highlighted: what the flags found; "
               "underlined: what people marked (wavy: unsupported, dotted: benign).")
    human = [{"start": s, "end": e, "kind": kind(label)} for m in marks for s, e, label in m.spans]
    result = _marker(data={"answer": answer, "flagged": [{"start": s["start"], "end": s["end"]} for s in flagged],
                           "human": human}, key=f"{key}_{response_id}", default={"selection": None},
                    on_selection_change=lambda: None)
    selection = getattr(result, "selection", None)
    prefix = f"{key}_{response_id}"
    disabled = reviewer is None
    if selection and 0 <= selection["start"] < selection["end"] <= len(answer):
        start, end = int(selection["start"]), int(selection["end"])
        st.markdown(f"Selected: “{inline(names.short(answer[start:end], 80))}”")
        cols = st.columns(2)
        for col, label in zip(cols, ("unsupported", "benign"), strict=True):
            col.button(f"Mark {label}", key=f"{prefix}_{label}_{start}_{end}", disabled=disabled,
                       on_click=_save, args=(db, response_id, reviewer, start, end, label, prefix,
                                             inline(names.short(answer[start:end], 60))))
    for i, span in enumerate(flagged):
        shown = inline(names.short(span["text"], 40))
        st.button(f"False alarm: {shown}", key=f"{prefix}_false_{i}", disabled=disabled,
                  on_click=_save, args=(db, response_id, reviewer, span["start"], span["end"], "false_alarm", prefix,
                                        shown),
                  help="the flag highlighted this, but the retrieved context supports it")
    st.button("Nothing unsupported here", key=f"{prefix}_none", disabled=disabled,
              on_click=_save, args=(db, response_id, reviewer, None, None, None, prefix))
    if disabled:
        st.caption("Say who you are (above) to mark text.")
    if error := st.session_state.pop(f"{prefix}_error", None):
        st.error(inline(error))
    if done := st.session_state.pop(f"{prefix}_done", None):
        st.success(done)
    if marks:
        st.caption("Marks: " + "; ".join(
            f"{inline(m.annotator)}: " + (", ".join(f"{inline(label or '')} “{inline(answer[s:e])}”"
                                                    for s, e, label in m.spans) or "nothing unsupported")
            for m in marks))
