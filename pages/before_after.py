"""Before/after (SPEC §8.2): one run under two evaluations — did the fix change what it should, and only that?"""

import math

import pandas as pd
import streamlit as st

from dashboard import charts, fmt, names
from dashboard.common import md, overrides_toggle, recompute_hint, select_in_url, sidebar_run_picker, store
from dashboard.review_origin import review_link as origin_link
from dashboard.shell import served_by_app
from evaluator.queries import before_after as q
from evaluator.rules.describe import TEMPLATE_WORDS

served_by_app()

PAGE_SIZE = 25
ALL = "(all)"
PROVIDER_PAGE = "providers_page"
TEMPLATE_NAMES = {"T1": "textual", "T2": "interpretive", "T3": "refusal"}  # the headline cards' short words
EXPLAINED = 50  # responses listed where the recorded verdicts and the legacy recompute disagree


def review_link(response_id: int, evaluation_id: int) -> str:
    """This page's link to Review (a LinkColumn cell): Review offers the way back here."""
    return origin_link(response_id, evaluation_id, "before_after", st.query_params.to_dict())


def change(value: float, *, lower_is_better: bool = False) -> dict:
    """st.metric delta arguments: the change in percentage points, or a quiet 'no change'."""
    if abs(value) < 1e-12:
        return {"delta": "no change", "delta_color": "off", "delta_arrow": "off"}
    return {"delta": f"{value * 100:+.1f} pp", "delta_color": "inverse" if lower_is_better else "normal"}


st.title("Before/after")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    options = q.rulesets(con, run)
    if len(options) < 2:
        has = f"only the {md(options[0])} evaluation" if options else "no evaluation"
        st.info(f"Run {md(run)} has {has}; a before/after needs two. {recompute_hint(run, options)}")
        st.stop()
    name_a = select_in_url("A — before", "a", options, default="recorded" if "recorded" in options else "legacy",
                           container=st.sidebar)
    name_b = select_in_url("B — after", "b", options, default="t3_aware", container=st.sidebar)
    with_overrides = overrides_toggle()
    if name_a == name_b:
        st.warning("A and B are the same evaluation: pick two different ones in the sidebar.")
        st.stop()
    eval_a, eval_b = q.latest_evaluation(con, run, name_a), q.latest_evaluation(con, run, name_b)
    assert eval_a is not None and eval_b is not None
    ida, idb = eval_a["evaluation_id"], eval_b["evaluation_id"]
    timing = q.durations(con, ida, idb)
    what_changed = q.rule_change(con, ida, idb)
    peer = q.peer_tool(con, ida) or q.peer_tool(con, idb)  # one side is a peer tool's own grades
    # A = legacy tells a different story than the run file's recorded verdicts where they disagree: say why.
    recorded = q.latest_evaluation(con, run, "recorded") if "legacy" in (name_a, name_b) else None
    legacy = eval_a if name_a == "legacy" else eval_b
    # A big PostgreSQL run's whole evaluations are read from this process's copy, once it has one.
    with q.reading(con, [ida, idb, recorded["evaluation_id"] if recorded else None]) as whole, \
            q.BeforeAfter(whole, ida, idb, with_overrides=with_overrides) as ba:
        n_disagree, disagree = (q.recorded_differences(whole, recorded["evaluation_id"], legacy["evaluation_id"],
                                                       limit=EXPLAINED)
                                if recorded is not None and "recorded" not in (name_a, name_b) else (0, []))
        # One ranked page of providers (most responses first) for the chart and the table; the others
        # are summed into one "… and N more" row, so 100k providers cost what 20 do.
        n_providers, shown = names.ranked_page(
            PROVIDER_PAGE, lambda limit, offset: ba.providers(limit=limit, offset=offset))
        rows = ba.summary(providers=shown, rest=True)
        changes = ba.check_changes()
        outside_flips, outside_groups, outside = ba.non_t3_changes(limit=10)
        templates = sorted({r["template"] for r in rows})
        flip_provider = names.provider_picker(
            "Flipped: provider", "flip_provider", lambda text, limit: ba.providers(limit=limit, contains=text or None),
            ba.has_provider, any_value=ALL, any_label=ALL, container=st.sidebar)
        flip_template = select_in_url("Flipped: template", "flip_template", [ALL, *templates],
                                      container=st.sidebar, format_func=lambda t: t if t == ALL else fmt.template(t))
        flip_filter = {"provider": None if flip_provider == ALL else flip_provider,
                       "template": None if flip_template == ALL else flip_template}
        total_flips = ba.flip_count()
        n_flips = ba.flip_count(**flip_filter) if any(flip_filter.values()) else total_flips
        pages = max(1, math.ceil(n_flips / PAGE_SIZE))
        if int(st.session_state.get("flip_page", 1)) > pages:  # fewer flips under the new filter
            st.session_state["flip_page"] = pages
        page_no = int(st.session_state.get("flip_page", 1))
        flipped = ba.flips(limit=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE, **flip_filter) if n_flips else []


def describe(evaluation: dict) -> str:
    if evaluation["ruleset"] == "recorded":
        return f"**recorded** (the verdicts in the run file, evaluation #{evaluation['evaluation_id']})"
    rules = (evaluation["rules_hash"] or "")[:12]
    return f"**{md(evaluation['ruleset'])}** (evaluation #{evaluation['evaluation_id']}, rules `{rules}`)"


verdicts = "effective verdicts (reviewer overrides applied)" if with_overrides else "computed verdicts"
st.markdown(f"Run **{md(run)}** — A = {describe(eval_a)} → B = {describe(eval_b)}; {verdicts}.")
# what the rule-set change does, generated from the two rule sets' difference, and the templates in words
if what_changed:
    st.info(f"**What changes:** {md(what_changed)}", icon=":material/rule:")
if any(t in ("T1", "T2", "T3") for t in templates):
    st.caption("Templates: " + "; ".join(TEMPLATE_WORDS[t] for t in ("T1", "T2", "T3") if t in templates) + ".")

# --- the loud part: verdicts outside T3 must not change --------------------------------------
# Only a templated run (T1/T2/T3) has a T3 fix to keep apart; on a run without templates (the rag
# profile, a peer tool's export) a rule change is meant to move verdicts, so the count is just said.
templated = any(t in ("T1", "T2", "T3") for t in templates)
if not templated:
    st.info(f"This run has no templates: {outside_flips:,} response verdict(s) differ between {md(name_a)} and "
            f"{md(name_b)} — see the flipped responses below.", icon=":material/info:")
elif outside:
    total = outside_flips
    where = ", ".join(f"{md(fmt.template(r['template']))}/{md(names.short(r['provider']))}: "
                      f"{r['flipped']:,}" for r in outside)
    if outside_groups > len(outside):
        where += f", {names.rest_label(outside_groups - len(outside), 'group')}"
    st.error(f"**{total:,} T1/T2 verdict(s) changed** between {md(name_a)} and {md(name_b)} ({where}). "
             "A fix for T3 must leave T1/T2 verdicts alone — check the flipped responses below.",
             icon=":material/error:")
else:
    st.success(f"No T1/T2 verdict changed between {md(name_a)} and {md(name_b)}.", icon=":material/check_circle:")

# --- the legacy recompute against the run file's recorded verdicts -----------------------------------
if disagree:
    st.subheader("Recorded verdicts vs the legacy recompute")
    by_template: dict[str, list[dict]] = {}
    for row in disagree:
        by_template.setdefault(row["template"], []).append(row)
    for template, rows_t in by_template.items():
        for (was, now), group in pd.DataFrame(rows_t).groupby(["recorded", "recomputed"], sort=False):
            questions = ", ".join(md(names.short(x, 30)) for x in dict.fromkeys(group["question_id"]))
            reasons = "; ".join(f"{md(r)}" for r in dict.fromkeys(group["because"]))
            verb = {"PASS": "pass", "FAIL": "fail"}
            st.info(f"**{md(fmt.template(template))}**: the recorded verdicts {verb.get(was, md(was))} "
                    f"{len(group)} response(s) (question {questions}) that the legacy recompute "
                    f"{verb.get(now, md(now))}s, because {reasons}.", icon=":material/help:")
    disagree_df = pd.DataFrame(disagree)
    disagree_df["template"] = disagree_df["template"].map(fmt.template)
    disagree_df["review"] = disagree_df["response_id"].map(lambda rid: review_link(rid, legacy["evaluation_id"]))
    st.dataframe(fmt.no_none(disagree_df[["review", "question_id", "provider", "template", "recorded", "recomputed",
                                          "because"]]),
                 hide_index=True,
                 column_config={"review": st.column_config.LinkColumn("open", display_text="Review ↗",
                                                                      help="This response in Review, under legacy"),
                                "recomputed": st.column_config.TextColumn("legacy"),
                                "because": st.column_config.TextColumn("checks that differ (legacy's reason)",
                                                                       width="large")}, placeholder=fmt.MISSING)
    if n_disagree > len(disagree):
        st.caption(f"The first {len(disagree)} of {n_disagree:,} responses whose verdicts differ.")
    st.caption("Recorded verdicts come from the evaluator that produced the run file; legacy re-runs the old "
               "rules here. Where they disagree, the run file's story and the recompute's differ.")

# --- headline figures per template, all providers --------------------------------------------
totals = [r for r in rows if r["provider"] == ALL]
st.subheader("Pass rate and false-failure rate, all providers")
columns = st.columns(max(1, len(totals)))
for column, r in zip(columns, totals, strict=False):
    label = md(fmt.template(r["template"]))
    words = f"{TEMPLATE_NAMES[r['template']]}, " if r["template"] in TEMPLATE_NAMES else ""
    column.metric(f"{label} pass rate ({words}{r['n']:,} responses)",
                  f"{fmt.percent(r['pass_rate_a'])} → {fmt.percent(r['pass_rate_b'])}",
                  **change(r["delta"]), border=True)
    column.metric(f"{label} false-failure rate",
                  f"{fmt.percent(r['false_failure_rate_a'])} → {fmt.percent(r['false_failure_rate_b'])}",
                  **change(r["false_failure_rate_b"] - r["false_failure_rate_a"], lower_is_better=True), border=True)
st.caption(q.FALSE_FAILURE_DEFINITION)
if peer:
    st.warning(f"One side holds {md(peer)}'s own grades, the other this product's checks: they measure different "
               "things, so a response one fails and the other passes is a disagreement, not a false failure. Read "
               "the false-failure rate here as how often they disagree; the flipped responses below tell which "
               "is right.", icon=":material/warning:")

# --- per provider x template, side by side ------------------------------------------------------
st.subheader("Per template and provider")
df = pd.DataFrame(rows)
df["template"] = df["template"].map(fmt.template)
df["delta_pp"] = df["delta"] * 100
per_provider = df[df["provider"] != ALL]
labels = names.chart_labels(shown, n_providers - len(shown))
per_provider = per_provider.assign(provider=per_provider["provider"].map(lambda v: labels.get(v, labels.get(None))))
side_a, side_b = f"A: {names.short(name_a)}", f"B: {names.short(name_b)}"
long = pd.concat([
    per_provider.assign(evaluation=side_a, pass_rate=per_provider["pass_rate_a"]),
    per_provider.assign(evaluation=side_b, pass_rate=per_provider["pass_rate_b"]),
])
long["label"] = long["pass_rate"].map(fmt.percent)
# A bar group per provider (the page's, and the rest), a panel per template: Plotly's cost grows with
# the traces (2 x templates), not with the providers.
fig = charts.bar(long, x="provider", y="pass_rate", color="evaluation", barmode="group", facet_col="template",
                 text="label", range_y=[0, 1.12], labels={"pass_rate": "pass rate", "provider": ""},
                 category_orders={"provider": list(labels.values()),
                                  "template": charts.template_panels(long["template"]),
                                  "evaluation": [side_a, side_b]},
                 color_discrete_sequence=["#9e9e9e", "#1565c0"])
fig.update_yaxes(tickformat=".0%")
fig.update_xaxes(matches=None)  # each template panel lists only the providers that have it
fig.update_traces(textposition="outside", textfont_size=12, cliponaxis=False)
charts.titled(fig, legend="", height=360, margin={"t": 40, "b": 10})
st.plotly_chart(fig, key="before_after_chart")
if n_providers > len(shown):
    st.caption(f"{n_providers:,} providers: the chart and the table show {len(shown)} of them (most responses "
               f"first) and sum the others in one “{names.rest_label(n_providers - len(shown))}” row; "
               "page through them below the table.")
df = pd.DataFrame(names.label_rows(df.to_dict("records"), n_providers - len(shown)))
st.dataframe(
    fmt.shares(fmt.no_none(df[["provider", "template", "n", "pass_rate_a", "pass_rate_b", "delta_pp",
                               "false_failure_rate_a", "false_failure_rate_b", "fail_to_pass", "pass_to_fail"]]),
               ["pass_rate_a", "pass_rate_b", "false_failure_rate_a", "false_failure_rate_b"]),
    hide_index=True,
    column_config={
        **fmt.counts("n"),
        "pass_rate_a": fmt.percent_column(f"pass rate A ({name_a})"),
        "pass_rate_b": fmt.percent_column(f"pass rate B ({name_b})"),
        "delta_pp": st.column_config.NumberColumn("Δ (pp)", format="%+.1f"),
        "false_failure_rate_a": fmt.percent_column("false failures A"),
        "false_failure_rate_b": fmt.percent_column("false failures B"),
        "fail_to_pass": fmt.count_column("FAIL → PASS"),
        "pass_to_fail": fmt.count_column("PASS → FAIL"),
    }, placeholder=fmt.MISSING)
names.pager(PROVIDER_PAGE, n_providers)

# --- check-level changes ------------------------------------------------------------------------
st.subheader("Check verdicts that changed in the flipped responses")
if total_flips > q.CHECK_CHANGES_UP_TO:
    st.caption(f"Counted over the first {q.CHECK_CHANGES_UP_TO:,} of the {total_flips:,} flipped responses.")
if changes:
    changes_df = pd.DataFrame(changes)
    changes_df["template"] = changes_df["template"].map(fmt.template)
    changes_df["change"] = changes_df["verdict_a"] + " → " + changes_df["verdict_b"]
    st.dataframe(changes_df[["check", "template", "change", "responses"]], hide_index=True, placeholder=fmt.MISSING,
                 column_config=fmt.counts("responses"))
else:
    st.caption("No flipped response, or only reviewer overrides flipped them.")

# --- flipped responses ------------------------------------------------------------------------------
st.subheader(f"Flipped responses ({n_flips:,})")
st.caption("Responses whose overall verdict differs between A and B, with the checks that changed and the "
           "reviewer's comment. Filter by provider and template in the sidebar.")
if flipped:
    flips_df = pd.DataFrame(flipped)
    flips_df["template"] = flips_df["template"].map(fmt.template)
    flips_df["verdict"] = flips_df["verdict_a"] + " → " + flips_df["verdict_b"]
    flips_df["review"] = flips_df["response_id"].map(lambda rid: review_link(rid, idb))
    st.dataframe(
        fmt.no_none(flips_df[["review", "question_id", "provider", "template", "verdict", "check_diff", "question",
                              "comment", "reviewer"]]),
        hide_index=True,
        column_config={"review": st.column_config.LinkColumn("open", display_text="Review ↗",
                                                             help="This response in Review, under B"),
                       "check_diff": st.column_config.TextColumn("checks changed (A → B)", width="large"),
                       "question": st.column_config.TextColumn(width="medium"),
                       "comment": st.column_config.TextColumn("reviewer comment", width="large"),
                       "reviewer": st.column_config.TextColumn("reviewer overrides")}, placeholder=fmt.MISSING)
    if pages > 1:
        st.pagination(pages, key="flip_page")
        st.caption(f"Page {page_no} of {pages}, {PAGE_SIZE} per page.")
else:
    st.caption("No response changed its overall verdict.")

# --- timing ---------------------------------------------------------------------------------------
st.subheader("Evaluation time")
left, right = st.columns(2)
for column, name, seconds in ((left, f"A: {md(name_a)}", timing["a_s"]), (right, f"B: {md(name_b)}", timing["b_s"])):
    column.metric(name, "—" if seconds is None else f"{seconds:.2f} s")
if timing["ratio"] is None:
    missing = [n for n, s in ((name_a, timing["a_s"]), (name_b, timing["b_s"])) if s is None]
    st.info(f"No duration for {', '.join(md(m) for m in missing)}: recorded verdicts come from the run file, "
            "so there is no evaluation time to compare. Pick legacy as A to check that the fix is at most 50% slower.")
elif timing["within_limit"]:
    st.success(f"B took {timing['ratio']:.2f}× the time of A — within the limit (at most 50% slower).")
else:
    st.error(f"B took {timing['ratio']:.2f}× the time of A — more than 50% slower than the limit allows.")
