"""Review (SPEC §8.5): one response in full; a reviewer overrides a verdict with a reason.

Deep link: ?response=ID&evaluation=ID. Overrides are append-only (evaluator.review.overrides);
the effective verdict is the latest override, else the computed one.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from dashboard import fmt, highlight, keys, names, review_queue, reviewing
from dashboard.annotate import render_rating_form
from dashboard.common import TEMPLATE_LABELS, select_in_url, sidebar_run_picker, store, store_path
from dashboard.review_origin import way_back
from dashboard.shell import served_by_app
from dashboard.span_marks import UNSUPPORTED_TEXT_FLAGS, render_span_marks
from evaluator.queries import review as q
from evaluator.review import pending
from evaluator.review import spans as span_view
from evaluator.review.config import load_review_config
from evaluator.review.overrides import OverrideError, allowed_values

served_by_app()

TARGET_LABELS = {"overall": "Overall verdict", "refused": "Refused (used by the metrics)"}
REASON_LABEL = "Reason"  # also how Alt+R finds the box (dashboard.keys): keep it a plain word
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
    """Keep the save durably (evaluator.review.pending), then write it if the store is free within a
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


SAVES = "review_saves"  # session state: saves so far; a new count gives the form fresh widgets


def _form_keys(response_id: int, target: str) -> tuple[str, str]:
    """Keys of the value and reason widgets. They change with each save, so after one the form starts
    from the new effective verdict with an empty reason, and the focus leaves the reason box (a new
    element), where J and K work again."""
    generation = st.session_state.get(SAVES, 0)
    return (f"override_value_{response_id}_{target}_{generation}", f"override_reason_{response_id}_{generation}")


def _submit(response_id: int, evaluation_id: int, reviewer: str, then_open: int | None = None) -> None:
    """Button callback: save the override, then (Save and next) open the next response of the queue;
    on an error keep what was typed and say what to fix."""
    target = st.session_state.get("override_target") or "overall"
    value_key, reason_key = _form_keys(response_id, target)
    value = st.session_state.get(value_key)
    saved = _save({"kind": "override", "response_id": response_id, "target": target, "new_value": value or "",
                   "reason": st.session_state.get(reason_key, ""), "reviewer": reviewer,
                   "evaluation_id": evaluation_id},
                  f"Override saved: {highlight.inline(target)} → {highlight.inline(str(value))}.")
    if saved:
        st.session_state[SAVES] = st.session_state.get(SAVES, 0) + 1
        if then_open is not None:
            review_queue.go_to(then_open)


def _choose(value_key: str, value: str) -> None:
    st.session_state[value_key] = value


def _step_target(targets: list[str], step: int) -> None:
    """H / L: the previous / next check (or verdict) to override, round the list."""
    at = targets.index(st.session_state["override_target"]) if st.session_state.get("override_target") in targets else 0
    st.session_state["override_target"] = targets[(at + step) % len(targets)]


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
        what = _pending_what(item)
        st.markdown(f":orange-badge[pending] {what} · by {highlight.inline(item.get('reviewer', ''))} — "
                    "waiting for the store to be free")
    for item in refused:
        save = item.get("save", {})
        st.error(f"Not saved ({_pending_what(save)}, by {highlight.inline(save.get('reviewer', ''))}): "
                 f"{highlight.inline(item.get('error', ''))}", icon=":material/error:")


def _pending_what(save: dict) -> str:
    """One line for a kept save of any kind: an override, a bulk one, a carried one, a rating."""
    kind = save.get("kind", "override")
    if kind == "override":
        return f"{highlight.inline(save.get('target', ''))} → {reviewing.badge(save.get('new_value'))}"
    if kind == "annotation":
        return f"rating {highlight.inline(save.get('label', ''))} = {highlight.inline(str(save.get('value', '')))}"
    if kind == "bulk":
        return f"bulk override of {len(save.get('overrides') or [])} responses"
    return "carried override"


def default_target(targets: list[str], current: dict[str, str | None]) -> str:
    """What P/F/N act on when a response opens: its first failing check, else the overall verdict."""
    failing = [t for t in targets if t not in ("overall", "refused") and current.get(t) == "FAIL"]
    return failing[0] if failing else ("overall" if "overall" in targets else targets[0])


def _override_form(response_id: int, evaluation_id: int, current: dict[str, str | None], targets: list[str],
                   reviewer: str | None, next_in_queue: int | None) -> None:
    st.subheader("Override")
    disabled = reviewer is None
    if (st.session_state.get("override_target") not in targets  # a check this bot does not run
            or st.session_state.get("override_target_of") != response_id):  # another response: its own default
        st.session_state["override_target"] = default_target(targets, current)
        st.session_state["override_target_of"] = response_id
    target = st.selectbox("What to override", targets, key="override_target", disabled=disabled,
                          format_func=lambda t: TARGET_LABELS.get(t, t),
                          help="Opens on the first failing check (a false positive is the usual case; the overall "
                               "verdict follows the checks), else on the overall verdict.")
    if len(targets) > 1:
        with st.container(horizontal=True):
            for label, key, step in (("Previous check", keys.PREVIOUS_TARGET, -1), ("Next check", keys.NEXT_TARGET, 1)):
                st.button(label, key=f"target_{step:+d}", shortcut=key, type="tertiary", disabled=disabled,
                          on_click=_step_target, args=(targets, step))
    values = list(allowed_values(target))
    now = current.get(target)
    value_key, reason_key = _form_keys(response_id, target)
    st.caption(f"Currently: {reviewing.badge(now) if now else 'not decided'}")
    value = st.radio("New value", values, index=values.index(now) if now in values else None, key=value_key,
                     horizontal=True, disabled=disabled)
    if set(values) <= set(keys.VERDICT_KEYS):
        with st.container(horizontal=True):
            for option, key in keys.VERDICT_KEYS.items():
                st.button(option, key=f"choose_{option.replace('/', '')}", shortcut=key, type="tertiary",
                          disabled=disabled or option not in values, on_click=_choose, args=(value_key, option))
    st.text_area(REASON_LABEL, key=reason_key, disabled=disabled,
                 placeholder="Required: why is the automated verdict wrong? e.g. a T3 refusal needs no citation")
    if "override_error" in st.session_state:
        st.error(highlight.inline(st.session_state.pop("override_error")), icon=":material/error:")
    if "override_done" in st.session_state:
        st.success(st.session_state.pop("override_done"), icon=":material/check_circle:")

    unchanged = value is None or value == now  # saving would write a no-op override
    with st.container(horizontal=True):
        st.button("Save override", type="primary", disabled=disabled or unchanged, on_click=_submit,
                  args=(response_id, evaluation_id, reviewer or ""), key="save_override", shortcut=keys.SAVE)
        if next_in_queue is not None:
            st.button("Save and next", disabled=disabled or unchanged, on_click=_submit,
                      args=(response_id, evaluation_id, reviewer or "", next_in_queue), key="save_and_next")
    if unchanged and not disabled:
        st.caption("Choose a value other than the current one to save an override.")
    if not disabled:
        keys.bind_reason_and_save(REASON_LABEL, "save_override")


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
    st.stop()
with store() as con:
    resp = q.response(con, response_id)
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
    if evaluation_id is None:
        st.stop()
    ids = [response_id]
    overall = q.overall(con, evaluation_id, response_id) or {}
    checks = q.checks(con, evaluation_id, ids)[response_id]
    flags = q.flags(con, evaluation_id, ids)[response_id]
    retrieved = q.retrieved(con, ids)[response_id]
    spans = span_view.of(con, evaluation_id, ids)[response_id]
    closest = span_view.closest_in_context(con, evaluation_id, resp["answer"], spans, retrieved)
    flagged = [{"start": a, "end": b, "text": resp["answer"][a:b]} for name in UNSUPPORTED_TEXT_FLAGS
               for a, b in span_view.of_flag(con, evaluation_id, name, ids).get(response_id, [])]
    history = q.history(con, response_id)
    candidates = q.carried_candidates(con, response_id)
    refused = q.refused_state(con, response_id)
    targets = q.override_targets(con, evaluation_id, response_id, resp["profile"])
    here = review_queue.place(con, review_queue.query_of(st.query_params), response_id)
    shown = q.display_rules(con, evaluation_id)

back = way_back(st.query_params.to_dict())
if back is not None:  # opened from a PM page: back there first, Triage beside it
    with st.container(horizontal=True):
        st.page_link(back[0], label=back[1], icon=":material/arrow_back:", query_params=back[2])
        st.page_link("pages/triage.py", label="Triage", icon=":material/filter_list:",
                     query_params=review_queue.back_params(here, resp["run"], evaluation_id))
else:
    st.page_link("pages/triage.py", label="Back to Triage", icon=":material/arrow_back:",
                 query_params=review_queue.back_params(here, resp["run"], evaluation_id))
if here is not None:
    review_queue.heading(here)
# Names from the run file are cut to one short line; the tooltip (and the metadata below) holds them in full.
heading = [(label, resp[key], names.heading(resp[key], 60)) for label, key in
           (("question id", "question_id"), ("provider", "provider"), ("model", "model")) if resp[key]]
full_names = "\n\n".join(f"{label}: {highlight.inline(value)}" for label, value, (_, cut) in heading if cut)
st.markdown("#### " + " · ".join(text for _, _, (text, _) in heading), help=full_names or None)
top = st.columns(4)
top[0].markdown(f"Effective verdict  \n{reviewing.badge(overall.get('overall'))}"
                f"{' :violet-badge[overridden]' if overall.get('overridden') else ''}")
top[1].markdown(f"Computed verdict  \n{reviewing.badge(overall.get('computed_overall'))}")
template = overall.get("template_group") or resp["template"] or "none"
top[2].markdown(f"Template  \n{highlight.inline(TEMPLATE_LABELS.get(template, template))}")
top[3].markdown(f"Run  \n{highlight.inline(resp['run'])}")

left, right = st.columns([3, 2], gap="large")
with left:
    reviewing.labelled("Question", resp["question"])
    reviewing.banners(flags, shown["banners"])
    st.caption("Answer")
    reviewing.answer(resp["answer"], spans)
    reviewing.closest_context(closest)
    if flags:
        st.markdown(reviewing.flag_badges(flags))
    if resp["comment"]:
        reviewing.labelled("Reviewer comment (from the run file)", resp["comment"], muted=True)
    st.subheader("Checks")
    reviewing.checks(checks)
    st.subheader("Retrieved items")
    reviewing.retrieved(retrieved, shown["threshold"], recorded=resp["retrieval_recorded"], spans=spans)
with right:
    config = load_review_config()
    reviewer = reviewing.identity_panel(config)
    current = {c["check"]: c["verdict"] for c in checks}
    current["overall"] = overall.get("overall")
    judge = None if refused["judge"] is None else ("REFUSED" if refused["judge"] else "NOT REFUSED")
    current["refused"] = refused["reviewer"] or judge
    _override_form(response_id, evaluation_id, current, targets, reviewer, review_queue.next_id(here))
    keys.caption(in_queue=here is not None)
    _carried(candidates, response_id, evaluation_id, reviewer)
    render_rating_form(store_path(), resp["run_id"], response_id, reviewer)  # the run's human labels
    render_span_marks(store_path(), response_id, resp["answer"], flagged, reviewer)

_pending_saves(response_id)
st.subheader("Override history")
if history:
    frame = pd.DataFrame(history)
    frame["carried_from_run"] = frame["carried_from_run"].fillna("")
    for column in ("old_value", "ruleset", "reason", "reviewer"):
        frame[column] = frame[column].fillna("—")  # never a literal "None" in the table
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
source_scores = (stored_json.get("metadata") or {}).get("metrics")
if isinstance(source_scores, dict) and source_scores:  # e.g. InspectorRAGet's algorithmic metrics
    st.subheader("Scores from the run file")
    st.dataframe(pd.DataFrame({"metric": [str(k) for k in source_scores],
                               "value": [fmt.score(v) for v in source_scores.values()]}),
                 hide_index=True, width="content")
with st.expander("Golden-set fields and metadata"):
    st.json({**details, **stored_json}, expanded=True)  # shown as data, never as markup
