"""Rule lab (issue 16 §3): edit a rule set, see its before/after on the whole run, save it as a new
named version, recompute the run with it."""

import hashlib
import math

import pandas as pd
import streamlit as st

from dashboard import fmt, names
from dashboard.common import command, md, select_in_url, sidebar_run_picker, store, store_path
from dashboard.review_origin import review_link as origin_link
from dashboard.shell import served_by_app
from evaluator.core.types import CHECK_NAMES
from evaluator.lab import rule_lab as lab
from evaluator.lab.recompute import recompute_with_progress
from evaluator.rules.load import Rules, load_rules
from evaluator.store import rulesets as stored_rulesets
from evaluator.store.db import connect

served_by_app()

FLIPS_PER_PAGE = 50
SAVED_KEY = "lab_saved"  # (run, base, name, version) of the rule set saved in this session


def review_link(response_id: int, evaluation_id: int) -> str:
    """This page's link to Review (a LinkColumn cell): Review offers the way back here."""
    return origin_link(response_id, evaluation_id, "rule_lab", st.query_params.to_dict())


def field_widget(f: lab.Field, value: object, key: str) -> object:
    if f.kind == lab.LINES:
        return st.text_area(f.label, value=str(value), key=key, help=f.help, height=120)
    if f.kind == lab.NUMBER:
        return st.number_input(f.label, value=float(value), min_value=0.0, step=0.05, format="%.2f", key=key,  # type: ignore[arg-type]
                               help=f.help)
    if f.kind == lab.CHECKS:
        return st.multiselect(f.label, list(CHECK_NAMES), default=list(value), key=key, help=f.help)  # type: ignore[call-overload]
    return st.text_input(f.label, value=str(value), key=key, help=f.help)


def show_preview(run: str, preview: lab.Preview, base_evaluation: int | None, seconds: float,
                 page_key: str) -> None:
    """The preview; its flips a page at a time, the page kept under ``page_key`` (one per preview,
    so that another preview starts at its first page)."""
    before, after = preview.passed_before / max(preview.n, 1), preview.passed_after / max(preview.n, 1)
    c1, c2, c3 = st.columns(3)
    c1.metric("Pass rate, base", fmt.percent(before))
    c2.metric("Pass rate, edited", fmt.percent(after), delta=f"{(after - before) * 100:+.1f} pp")
    c3.metric("Flipped responses", f"{len(preview.flips):,}")
    st.caption(f"{preview.n:,} responses of {md(run)} evaluated in {seconds:.2f} s.")
    changed = {k: v for k, v in preview.check_changes.items() if v}
    if changed:
        st.markdown("Checks whose verdict changed: " + ", ".join(f"{md(k)} ({v:,})" for k, v in changed.items()))

    st.subheader("Pass rate per template and provider")
    by_provider: dict[str, int] = {}
    for g in preview.groups:
        by_provider[g.provider] = by_provider.get(g.provider, 0) + g.n
    ranked = sorted(by_provider, key=lambda p: (-by_provider[p], p))
    top = set(ranked[: names.TOP_N])
    rest = len(ranked) - len(top)
    rows: dict[tuple[str, str], list[int]] = {}
    for g in preview.groups:
        provider = g.provider if g.provider in top else names.rest_label(rest)
        acc = rows.setdefault((g.template, provider), [0, 0, 0])
        acc[0] += g.n
        acc[1] += g.passed_before
        acc[2] += g.passed_after
    table = pd.DataFrame([{"template": fmt.template(t), "provider": p, "responses": n, "base": b / n,
                           "edited": a / n, "change (pp)": round((a - b) / n * 100, 1)}
                          for (t, p), (n, b, a) in rows.items()])
    st.dataframe(fmt.shares(table, ["base", "edited"]), hide_index=True,
                 column_config={"base": fmt.percent_column("base"), "edited": fmt.percent_column("edited"),
                                "provider": st.column_config.TextColumn("provider")})

    st.subheader("Flipped responses")
    if not preview.flips:
        st.info("No response changes its overall verdict under the edited rules.")
        return
    pages = max(1, math.ceil(len(preview.flips) / FLIPS_PER_PAGE))
    page_no = min(int(st.session_state.get(page_key, 1)), pages)
    shown = preview.flips[(page_no - 1) * FLIPS_PER_PAGE: page_no * FLIPS_PER_PAGE]
    flips = pd.DataFrame([{
        "review": review_link(f.response_id, base_evaluation) if base_evaluation is not None else None,
        "response_id": f.response_id, "question_id": f.question_id, "provider": f.provider,
        "template": fmt.template(f.template), "verdict": f"{f.before} → {f.after}",
        "check_diff": "; ".join(f"{c}: {b} → {a}" for c, b, a in f.changes),
    } for f in shown])
    config = {"check_diff": st.column_config.TextColumn("checks changed (base → edited)", width="large")}
    if base_evaluation is not None:
        config["review"] = st.column_config.LinkColumn("open", display_text="Review ↗",
                                                       help="This response in Review, under the base evaluation")
    else:
        flips = flips.drop(columns=["review"])
        st.caption("Recompute the run under the base rule set to open these responses in Review.")
    st.dataframe(fmt.no_none(flips), hide_index=True, column_config=config)
    if pages > 1:
        st.pagination(pages, key=page_key)
        st.caption(f"Page {page_no} of {pages} ({len(preview.flips):,} flips, {FLIPS_PER_PAGE} per page).")


st.title("Rule lab")
actions: dict[str, object] = {}
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    run_id, profile, content_hash = con.execute(
        "SELECT run_id, profile, content_hash FROM runs WHERE name = $name", {"name": run}).fetchall()[0]
    defaults = load_rules()
    saved_names = stored_rulesets.names(con)
    base_name = select_in_url("Base rule set", "base", [*defaults.ruleset_names, *saved_names],
                              default="t3_aware", container=st.sidebar)
    assert base_name is not None
    saved_base = stored_rulesets.version_of(con, base_name) if base_name in saved_names else None
    base: Rules = saved_base.rules() if saved_base is not None else defaults
    if saved_base is not None:
        st.sidebar.caption(f"Saved version {saved_base.version} (rules {saved_base.rules_hash[:12]})")
    if profile not in base.profile_names:
        st.error(f"Run {md(run)} has profile {md(profile)}, which the base rules do not define.")
        st.stop()

    st.caption(f"Edit the rules of {md(base_name)} for profile {md(profile)}, then preview their effect on every "
               "response of the run. Nothing is saved until you press **Save as**.")
    values = lab.form_values(base, profile)
    prefix = f"lab_{base_name}_{base.hash[:8]}_{profile}_"
    slots: dict[str, object] = {}
    with st.form("lab_form"):
        typed: dict[str, object] = {}
        for f in lab.fields(profile):
            if f.key not in values:
                continue
            typed[f.key] = field_widget(f, values[f.key], prefix + f.key)
            slots[f.key] = st.empty()
        override = st.text_area("More rules (TOML, merged on top like a --rules file)", key=prefix + "toml",
                                height=120, placeholder='[answers]\nsubstantive_patterns = ["according to the text"]')
        slots[lab.TOML_FIELD] = st.empty()
        previewed = st.form_submit_button("Preview", type="primary")
    if previewed:
        st.session_state["lab_preview_on"] = True

    try:
        edited = lab.edit(base, profile, typed, override)
    except lab.FieldError as exc:
        slots[exc.field].error(exc.message, icon=":material/error:")  # type: ignore[attr-defined]
        st.error("The edited rules are not valid: fix the field marked above. Nothing was saved.")
        st.stop()
    if edited.rules.hash == base.hash:
        st.caption("No change from the base rules yet.")

    run_key = (store_path(), int(run_id), content_hash)
    base_evaluation = lab.stored_evaluation(con, run_id, base_name, base, profile)
    if st.session_state.get("lab_preview_on"):
        with st.spinner("Evaluating every response of the run…"):
            shown = lab.preview_edit(con, run_key, run_id, base, edited.rules, base_name, profile, base_evaluation)
        # The evaluation's own time, kept with its cached preview (a rerun, e.g. another page of
        # flips, reads it in no time).
        this_preview = hashlib.sha256(repr((run_key, base_name, base.hash, edited.rules.hash, profile)).encode())
        show_preview(run, shown.preview, base_evaluation, shown.seconds,
                     page_key=f"lab_flip_page_{this_preview.hexdigest()[:16]}")

    st.divider()
    st.subheader("Save as a new rule set version")
    with st.form("lab_save"):
        new_name = st.text_input("Name (letters, digits, _ or -)", key="lab_name")
        author = st.text_input("Your name (optional)", key="lab_author")
        name_slot = st.empty()
        if st.form_submit_button("Save as"):
            try:
                stored_rulesets.check_name(new_name)
                actions["save"] = (new_name, edited.text_as(new_name, base_name), author.strip() or None)
            except ValueError as exc:
                name_slot.error(str(exc), icon=":material/error:")

if "save" in actions:
    new_name, text, author = actions["save"]  # type: ignore[misc]
    with connect(store_path()) as wcon:
        saved = stored_rulesets.save(wcon, new_name, text, created_by=author)
    st.session_state[SAVED_KEY] = (run, base_name, saved.name, saved.version)
    st.success(f"Saved {md(saved.name)} version {saved.version} (rules {saved.rules_hash[:12]}).",
               icon=":material/check:")

just_saved = st.session_state.get(SAVED_KEY)
if just_saved and just_saved[0] == run:
    _, a_name, b_name, version = just_saved
    st.subheader("Recompute with it")
    st.markdown(f"Evaluate every response of {md(run)} under {md(b_name)} version {version} and store the "
                f"evaluation (same as {command('recompute', '--run', run, '--ruleset', b_name)}).")
    if st.button("Recompute with it", key="lab_recompute"):
        bar = st.progress(0.0, text=f"Recomputing {md(run)} under {md(b_name)}…")
        with connect(store_path(), read_only=True) as rcon:
            saved_version = stored_rulesets.version_of(rcon, b_name, version)
            base_missing = lab.stored_evaluation(rcon, run_id, a_name, base, profile) is None
        assert saved_version is not None
        steps = [(a_name, base)] if base_missing else []
        steps.append((b_name, saved_version.rules()))
        for i, (ruleset, rules) in enumerate(steps):
            def report(done: float, i: int = i, ruleset: str = ruleset) -> None:
                bar.progress((i + done) / len(steps),
                             text=f"Recomputing {md(run)} under {md(ruleset)}: {fmt.percent(done)}")
            result = recompute_with_progress(store_path(), run, ruleset, rules, report)
        bar.progress(1.0, text="Done")
        st.success(f"Stored evaluation {result.evaluation_id}: {md(run)} under {md(b_name)} "
                   f"({result.n_responses:,} responses).", icon=":material/check:")
        st.page_link("pages/before_after.py", label="Open Before/after (A = base, B = new rule set)",
                     icon=":material/compare_arrows:", query_params={"run": run, "a": a_name, "b": b_name})
