"""Review (SPEC §8.5): one response in full; a reviewer overrides a verdict with a reason.

Deep link: ?response=ID&evaluation=ID. Overrides are append-only (evaluator.overrides);
the effective verdict is the latest override, else the computed one.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import highlight, names, reviewing
from dashboard.common import select_in_url, sidebar_run_picker, store, store_path
from dashboard.shell import served_by_app
from evaluator import pending
from evaluator.overrides import OverrideError, allowed_values, targets_for
from evaluator.queries import review as q
from evaluator.review_config import load_review_config

served_by_app()

TARGET_LABELS = {"overall": "Overall verdict", "refused": "Refused (used by the metrics)"}
PICKER_LIMIT = 100  # responses offered by the picker at a time; typing narrows them
SAVE_WAIT_S = 2.0  # a save waits this long for a busy store, then stays pending (never lost)


def _response_id() -> int | None:
    try:
        return int(st.query_params.get("response", ""))
    except ValueError:
        return None


def _pick_response() -> None:
    """Opened without ?response=: choose a run and one of its responses."""
    with store() as con:
        run = sidebar_run_picker(con)
        if not run:
            st.stop()
        typed = names.name_filter("find", label="Question id or provider")
        choices = q.response_choices(con, q.run_id(con, run), limit=PICKER_LIMIT, contains=typed or None)
    st.info("Pick a response here, or open one from **Triage** (its *Review* link).")
    if not choices:
        st.caption(f"No response of this run has “{highlight.inline(names.short(typed))}” in its question id or "
                   "provider." if typed else "This run has no responses.")
        st.stop()
    if choices[0]["total"] > len(choices):
        st.caption(f"The first {len(choices):,} of {choices[0]['total']:,} responses"
                   f"{' matching the filter' if typed else ''}; type a question id or provider to narrow them.")
    labels = {c["response_id"]: f"{names.short(c['question_id'], 30)} · {names.short(c['provider'], 30)} · "
                                f"{names.short(c['question'], 80)}" for c in choices}
    picked = st.selectbox("Response", list(labels), index=None, format_func=labels.get,
                          placeholder="Choose a response…")
    if picked is not None:
        st.query_params["response"] = str(picked)
        st.rerun()
    st.stop()


def _save(save: dict, done_message: str) -> bool:
    """Keep the save durably (evaluator.pending), then write it if the store is free within a
    moment; otherwise it stays pending and the background writer lands it when the store frees.
    Returns False (with the error kept to show) when the save can never be written."""
    try:
        token = pending.submit(store_path(), save)
    except OverrideError as exc:
        st.session_state["override_error"] = str(exc)
        return False
    outcome = pending.apply(store_path(), [token], timeout_s=SAVE_WAIT_S)[0]
    st.session_state.pop("override_error", None)
    if outcome.state == "failed":
        st.session_state["override_error"] = outcome.message or "the override could not be written"
        return False
    if outcome.state == "pending":
        st.session_state["override_pending"] = (
            "Kept as pending: another program is using the store. It will be written as soon as the store "
            "is free — you can go on reviewing; it shows under *Pending saves* until then.")
    else:
        st.session_state["override_done"] = done_message
    return True


def _submit(response_id: int, evaluation_id: int, reviewer: str) -> None:
    """Button callback: save the override; on an error keep what was typed and say what to fix."""
    target = st.session_state.get("override_target")
    value = st.session_state.get(f"override_value_{target}")
    reason = st.session_state.get("override_reason", "")
    saved = _save({"kind": "override", "response_id": response_id, "target": target, "new_value": value or "",
                   "reason": reason, "reviewer": reviewer, "evaluation_id": evaluation_id},
                  f"Override saved: {target} → {value}.")
    if saved:
        st.session_state["override_reason"] = ""
        st.session_state.pop(f"override_value_{target}", None)  # the next default flips the new verdict


def _apply(response_id: int, carried_from: int, evaluation_id: int, reviewer: str) -> None:
    _save({"kind": "carry", "response_id": response_id, "carried_from": carried_from, "reviewer": reviewer,
           "evaluation_id": evaluation_id}, "Carried override applied.")


def _pending_saves(response_id: int) -> None:
    """Saves of this response that are kept but not in the store yet, and any it refused."""
    waiting = pending.pending(store_path(), response_id)
    refused = [f for f in pending.iter_failed(store_path()) if f.get("save", {}).get("response_id") == response_id]
    if not waiting and not refused:
        return
    st.subheader("Pending saves")
    for item in waiting:
        what = (f"{highlight.inline(item.get('target', ''))} → {reviewing.badge(item.get('new_value'))}"
                if item.get("kind") == "override" else "carried override")
        st.markdown(f":orange-badge[pending] {what} · by {highlight.inline(item.get('reviewer', ''))} — "
                    "waiting for the store to be free")
    for item in refused:
        save = item.get("save", {})
        st.error(f"Not saved ({highlight.inline(save.get('target', 'carried override'))} → "
                 f"{highlight.inline(save.get('new_value', ''))}, by {highlight.inline(save.get('reviewer', ''))}): "
                 f"{highlight.inline(item.get('error', ''))}", icon=":material/error:")


def _override_form(response_id: int, evaluation_id: int, current: dict[str, str | None], targets: list[str],
                   reviewer: str | None) -> None:
    st.subheader("Override")
    disabled = reviewer is None
    target = st.selectbox("What to override", targets, key="override_target", disabled=disabled,
                          format_func=lambda t: TARGET_LABELS.get(t, t))
    values = list(allowed_values(target))
    now = current.get(target)
    default = next((v for v in values if v != now), values[0])
    st.caption(f"Currently: {reviewing.badge(now) if now else 'not decided'}")
    st.radio("New value", values, index=values.index(default), key=f"override_value_{target}", horizontal=True,
             disabled=disabled)
    st.text_area("Reason (required)", key="override_reason", disabled=disabled,
                 placeholder="Why is the automated verdict wrong? e.g. a T3 refusal needs no citation")
    if "override_error" in st.session_state:
        st.error(st.session_state.pop("override_error"), icon=":material/error:")
    if "override_done" in st.session_state:
        st.success(st.session_state.pop("override_done"), icon=":material/check_circle:")

    st.button("Save override", type="primary", disabled=disabled, on_click=_submit,
              args=(response_id, evaluation_id, reviewer or ""), key="save_override")


def _carried(candidates: list[dict], response_id: int, evaluation_id: int, reviewer: str | None) -> None:
    if not candidates:
        return
    st.subheader("Carried from earlier runs")
    st.caption("The same answer (same question, provider and text) was reviewed in an earlier run.")
    for candidate in candidates:
        with st.container(border=True):
            st.markdown(
                f"**{highlight.inline(candidate['target'])}** → {reviewing.badge(candidate['new_value'])} · "
                f"carried from run **{highlight.inline(candidate['source_run'])}** · by "
                f"{highlight.inline(candidate['reviewer'])}, {candidate['created_at']:%Y-%m-%d %H:%M}"
            )
            reviewing.labelled("Reason", candidate["reason"])
            st.button("Apply carried override", key=f"carry_{candidate['override_id']}", disabled=reviewer is None,
                      on_click=_apply, args=(response_id, candidate["override_id"], evaluation_id, reviewer or ""))


st.title("Review")
if "override_pending" in st.session_state:  # shown first: the rest of the page may still wait for the store
    st.info(st.session_state.pop("override_pending"), icon=":material/schedule:")
response_id = _response_id()
if response_id is None:
    _pick_response()
with store() as con:
    resp = q.response(con, response_id) if response_id is not None else None
    if resp is None:
        st.error(f"No response with id {highlight.inline(st.query_params.get('response', ''))} in this store.")
        if st.button("Pick another response"):
            del st.query_params["response"]
            st.rerun()
        st.stop()
    evaluations = q.evaluations_of_run(con, resp["run_id"])
    if not evaluations:
        st.info("This run has no evaluation yet.")
        st.stop()
    labels = {e["evaluation_id"]: q.evaluation_label(e) for e in evaluations}
    st.sidebar.caption(f"Run: **{highlight.inline(resp['run'])}**")
    evaluation_id = select_in_url("Evaluation (rule set)", "evaluation", list(labels),
                                  default=q.default_evaluation(evaluations), container=st.sidebar,
                                  format_func=labels.get)
    ids = [response_id]
    overall = q.overall(con, evaluation_id, response_id) or {}
    checks = q.checks(con, evaluation_id, ids)[response_id]
    flags = q.flags(con, evaluation_id, ids)[response_id]
    retrieved = q.retrieved(con, ids)[response_id]
    spans = q.spans(con, evaluation_id, ids)[response_id]
    history = q.history(con, response_id)
    candidates = q.carried_candidates(con, response_id)
    refused = q.refused_state(con, response_id)
    targets = targets_for(con, response_id)
    shown = q.display_rules(con, evaluation_id)

st.page_link("pages/triage.py", label="Back to Triage", icon=":material/arrow_back:",
             query_params={"run": resp["run"], "evaluation": str(evaluation_id)})
# Names from the run file are cut to one short line; the tooltip (and the metadata below) holds them in full.
heading = [(label, resp[key], names.heading(resp[key], 60)) for label, key in
           (("question id", "question_id"), ("provider", "provider"), ("model", "model")) if resp[key]]
full_names = "\n\n".join(f"{label}: {highlight.inline(value)}" for label, value, (_, cut) in heading if cut)
st.markdown("#### " + " · ".join(text for _, _, (text, _) in heading), help=full_names or None)
top = st.columns(4)
top[0].markdown(f"Effective verdict  \n{reviewing.badge(overall.get('overall'))}"
                f"{' :violet-badge[overridden]' if overall.get('overridden') else ''}")
top[1].markdown(f"Computed verdict  \n{reviewing.badge(overall.get('computed_overall'))}")
top[2].markdown(f"Template  \n{highlight.inline(overall.get('template_group') or resp['template'] or '—')}")
top[3].markdown(f"Run  \n{highlight.inline(resp['run'])}")

left, right = st.columns([3, 2], gap="large")
with left:
    reviewing.labelled("Question", resp["question"])
    reviewing.banners(flags, shown["banners"])
    st.caption("Answer")
    reviewing.answer(resp["answer"], spans)
    if flags:
        st.markdown(reviewing.flag_badges(flags))
    if resp["comment"]:
        reviewing.labelled("Reviewer comment (from the run file)", resp["comment"], muted=True)
    st.subheader("Checks")
    reviewing.checks(checks)
    st.subheader("Retrieved items")
    reviewing.retrieved(retrieved, shown["threshold"])
with right:
    config = load_review_config()
    reviewer = reviewing.identity_panel(config)
    current = {c["check"]: c["verdict"] for c in checks}
    current["overall"] = overall.get("overall")
    judge = None if refused["judge"] is None else ("REFUSED" if refused["judge"] else "NOT REFUSED")
    current["refused"] = refused["reviewer"] or judge
    _override_form(response_id, evaluation_id, current, targets, reviewer)
    _carried(candidates, response_id, evaluation_id, reviewer)

_pending_saves(response_id)
st.subheader("Override history")
if history:
    frame = pd.DataFrame(history)
    frame["carried_from_run"] = frame["carried_from_run"].fillna("")
    st.dataframe(frame[["created_at", "reviewer", "target", "old_value", "new_value", "ruleset", "carried_from_run",
                        "reason", "override_id"]],
                 hide_index=True, width="stretch",
                 column_config={"created_at": st.column_config.DatetimeColumn("when", format="YYYY-MM-DD HH:mm:ss"),
                                "ruleset": "evaluation", "carried_from_run": "carried from run"})
else:
    st.caption("No overrides yet: the computed verdicts stand.")

details = {k: resp[k] for k in ("question_id", "provider", "model", "expected_template", "template",
                                "expected_routing", "classification", "answerable", "outcome") if resp[k] is not None}
stored_json = {k: json.loads(resp[k]) for k in ("gold_answers", "expected_ids", "metadata") if resp[k]}
with st.expander("Golden-set fields and metadata"):
    st.json({**details, **stored_json}, expanded=True)  # shown as data, never as markup
