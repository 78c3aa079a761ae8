"""Compare runs (SPEC §8.3): two runs of the same golden set under one rule set — what changed, and is it real?"""

import math

import pandas as pd
import streamlit as st

from dashboard import charts, fmt, names, word_diff
from dashboard.common import md, overrides_toggle, recompute_hint, select_in_url, sidebar_run_picker, store
from dashboard.review_origin import review_link as origin_link
from dashboard.shell import served_by_app
from evaluator.queries import compare as q

served_by_app()

PAGE_SIZE = 20  # flips a page, and so the choices of the side-by-side picker
ALPHA = 0.05
PROVIDER_PAGE = "providers_page"


TABS = {"Regressions": "regressions", "Fixes": "fixes"}  # tab label (in the URL: ?flips=Fixes) -> flip kind


def interval(ci: list[float] | None, points: bool = False) -> str:
    if not ci:
        return fmt.MISSING
    if points:
        return f"[{ci[0] * 100:+.1f}, {ci[1] * 100:+.1f}] pp"
    return f"[{fmt.percent(ci[0])}, {fmt.percent(ci[1])}]"


def review_link(response_id: int, evaluation_id: int) -> str:
    """This page's link to Review (a LinkColumn cell): Review offers the way back here."""
    return origin_link(response_id, evaluation_id, "compare", st.query_params.to_dict())


def p_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def page_of(kind: str, total: int) -> int:
    """The page of this flip list to show (its pagination widget's state, kept within the pages there are)."""
    key = f"{kind}_page"
    pages = max(1, math.ceil(total / PAGE_SIZE))
    # the pager is bound to the URL (?fixes_page=2): a shared link opens on its page
    try:
        current = int(st.session_state.get(key) or st.query_params.get(key) or 1)
    except ValueError:
        current = 1
    current = min(max(current, 1), pages)
    if st.session_state.get(key) not in (None, current):
        st.session_state[key] = current
    return current


st.title("Compare runs")
with store() as con:
    run_a = sidebar_run_picker(con, label="Run A (before)")
    if run_a is None:
        st.stop()
    others = [name for name in q.run_names(con) if name != run_a]
    if not others:
        st.info("Only one run in the store: ingest another run of the same golden set to compare.")
        st.stop()
    related = q.default_against(con, run_a)  # None: no other run shares a question with A
    run_b = select_in_url("Run B (after)", "against", others, default=related, container=st.sidebar)
    shared_questions = q.shared_questions(con, run_a, run_b)
    shared = q.common_rulesets(con, run_a, run_b)
    if not shared:
        has_a, has_b = q.rulesets(con, run_a), q.rulesets(con, run_b)
        have = "; ".join(f"{md(r)} has {', '.join(md(x) for x in has) or 'no evaluation'}"
                         for r, has in ((run_a, has_a), (run_b, has_b)))
        # the run that lacks the other's rule set is the one to evaluate (both, when neither has one)
        hints = [recompute_hint(r, has, other) for r, has, other in ((run_b, has_b, has_a), (run_a, has_a, has_b))
                 if not has or not other or [x for x in other if x != "recorded" and x not in has]]
        st.info(f"{md(run_a)} and {md(run_b)} have no rule set in common ({have}). "
                + " ".join(h for h in dict.fromkeys(hints) if h))
        st.stop()
    ruleset = select_in_url("Rule set", "ruleset", shared, default="t3_aware", container=st.sidebar)
    with_overrides = overrides_toggle()
    eval_a, eval_b = q.latest_evaluation(con, run_a, ruleset), q.latest_evaluation(con, run_b, ruleset)
    assert eval_a is not None and eval_b is not None
    ida, idb = eval_a["evaluation_id"], eval_b["evaluation_id"]
    # One ranked page of providers (most responses first) for the chart and the tables; the others are
    # summed into one "… and N more" row, so 100k providers cost what 20 do.
    n_providers, shown = names.ranked_page(
        PROVIDER_PAGE, lambda limit, offset: q.provider_ranking(con, [ida, idb], limit=limit, offset=offset))
    rest = n_providers - len(shown)
    rates = q.pass_rates(con, ida, idb, with_overrides=with_overrides, providers=shown, rest=True)
    with q.RunComparison(con, ida, idb, with_overrides=with_overrides) as comparison:
        tests = comparison.mcnemar(providers=shown, rest=True)
        summary = q.flip_summary(tests)
        offsets = {kind: (page_of(kind, summary[kind]["count"]) - 1) * PAGE_SIZE for kind in q.FLIP_KINDS}
        lists = comparison.flips(limit=PAGE_SIZE, offsets=offsets)
    pairing = q.pairing(rates, tests)

verdicts = "effective verdicts (reviewer overrides applied)" if with_overrides else "computed verdicts"
st.markdown(f"**{md(run_a)}** (A, evaluation #{ida}) → **{md(run_b)}** (B, evaluation #{idb}) under "
            f"**{md(ruleset)}**, {verdicts}.")
st.caption(f"Pairs = the same question_id and provider in both runs: {pairing['paired']:,} pairs; "
           f"{pairing['only_a']:,} responses only in A, {pairing['only_b']:,} only in B.")
if shared_questions == 0:
    st.warning(f"{md(run_a)} and {md(run_b)} share no question: they are not runs of the same golden set, so no "
               "response can be paired, nothing can flip and there is no paired test. A difference of their "
               "pass rates would measure other questions, not a change: no headline delta is given, only "
               "each run's pass rates side by side."
               + ("" if related is not None else f" No other run in the store shares a question with {md(run_a)}."))
elif pairing["paired"] == 0:
    st.warning(f"{md(run_a)} and {md(run_b)} share {shared_questions:,} question(s) but no provider answered one "
               "of them in both runs (pairs are the same question_id and provider): they are not runs of the "
               "same golden set, so nothing can flip and there is no paired test. Pass rates are shown side by side.")

overall = next((t for t in tests if t["provider"] == q.ALL and t["template"] == q.ALL), None)
total = next((r for r in rates if r["provider"] == q.ALL and r["template"] == q.ALL), None)
if shared_questions and total is not None and overall is not None:  # no shared question: no headline (said above)
    cols = st.columns([1.6, 1, 1, 1])
    cols[0].metric("Pass rate, all responses", f"{fmt.percent(total['rate_a'])} → {fmt.percent(total['rate_b'])}",
                   None if total["delta"] is None else f"{total['delta'] * 100:+.1f} pp", border=True)
    cols[1].metric("Regressions (pass → fail)", summary["regressions"]["count"], border=True)
    cols[2].metric("Fixes (fail → pass)", summary["fixes"]["count"], border=True)
    if pairing["paired"] == 0:
        cols[3].metric("McNemar exact p (all pairs)", fmt.MISSING, border=True, help="No pairs: nothing to test.")
    else:
        cols[3].metric("McNemar exact p (all pairs)", p_text(overall["p_value"]), border=True)
        b, c = overall["regressions"], overall["fixes"]
        if b + c == 0:
            st.info("No pair flipped: A and B agree on every paired response.")
        elif overall["p_value"] < ALPHA:
            better = "better" if c > b else "worse"
            st.success(f"B is {better} than A beyond chance: {c:,} fixes vs {b:,} regressions among "
                       f"{overall['pairs']:,} pairs (McNemar exact p = {p_text(overall['p_value'])} < {ALPHA}).")
        else:
            st.info(f"Not significant: {c:,} fixes vs {b:,} regressions among {overall['pairs']:,} pairs could be "
                    f"chance (McNemar exact p = {p_text(overall['p_value'])} ≥ {ALPHA}).")

st.subheader("Pass rates per template and provider")
df = pd.DataFrame(rates)
df["template"] = df["template"].map(fmt.template)
labels = names.chart_labels(shown, rest)
chart_rows = df[(df["provider"] != q.ALL) & (df["template"] != q.ALL)]
chart_rows = chart_rows.assign(provider=chart_rows["provider"].map(lambda v: labels.get(v, labels.get(None))))
side_a, side_b = f"A: {names.short(run_a)}", f"B: {names.short(run_b)}"
if side_a == side_b:  # two long names cut alike
    side_a, side_b = f"A: {names.short(run_a)} (1)", f"B: {names.short(run_b)} (2)"
long = pd.concat([
    pd.DataFrame({"provider": chart_rows["provider"], "template": chart_rows["template"],
                  "run": side_a, "rate": chart_rows["rate_a"],
                  "low": chart_rows["ci_a"].str[0], "high": chart_rows["ci_a"].str[1]}),
    pd.DataFrame({"provider": chart_rows["provider"], "template": chart_rows["template"],
                  "run": side_b, "rate": chart_rows["rate_b"],
                  "low": chart_rows["ci_b"].str[0], "high": chart_rows["ci_b"].str[1]}),
]).dropna(subset=["rate"])
# A bar group per provider (the page's, and the rest), a panel per template: Plotly's cost grows with
# the traces (2 x templates), not with the providers.
fig = charts.bar(long, x="provider", y="rate", color="run", barmode="group", facet_col="template",
                 error_y=long["high"] - long["rate"], error_y_minus=long["rate"] - long["low"],
                 range_y=[0, 1.05], labels={"rate": "pass rate", "provider": ""},
                 category_orders={"provider": list(labels.values()), "run": [side_a, side_b],
                                  "template": charts.template_panels(long["template"])},
                 color_discrete_sequence=["#9e9e9e", "#1565c0"])
fig.update_yaxes(tickformat=".0%")
fig.update_xaxes(matches=None)  # each template panel lists only the providers that have it
fig.update_traces(hovertemplate=f"%{{x}}: %{{y:{fmt.PLOTLY_PERCENT}}}<extra>%{{fullData.name}}</extra>")
charts.titled(fig, legend="", height=360, margin={"t": 40, "b": 10})
st.plotly_chart(fig, key="compare_chart")
st.caption("Whiskers: 95% Wilson intervals. Δ interval: Newcombe's score interval for B − A, which treats the "
           "runs as independent — conservative for paired runs; the paired test is McNemar's below.")
if rest:
    st.caption(f"{n_providers:,} providers: the chart and both tables show {len(shown)} of them (most responses "
               f"first) and sum the others in one “{names.rest_label(rest)}” row; page through them below "
               "the McNemar table.")
df = pd.DataFrame(names.label_rows(df.to_dict("records"), rest))
table = pd.DataFrame({
    "provider": df["provider"], "template": df["template"],
    "n A": df["n_a"], "pass A": df["rate_a"], "95% CI A": df["ci_a"].map(interval),
    "n B": df["n_b"], "pass B": df["rate_b"], "95% CI B": df["ci_b"].map(interval),
    "Δ (pp)": df["delta"] * 100, "95% CI Δ": df["delta_ci"].map(lambda ci: interval(ci, points=True)),
})
st.dataframe(fmt.shares(fmt.no_none(table), ["pass A", "pass B"]), hide_index=True, column_config={
    **fmt.counts("n A", "n B"),
    "pass A": fmt.percent_column(),
    "pass B": fmt.percent_column(),
    "Δ (pp)": st.column_config.NumberColumn(format="%+.1f"),
}, placeholder=fmt.MISSING)

st.subheader("Paired flips: McNemar's exact test")
st.caption("For each group: pairs, both pass / both fail (concordant), regressions b (A pass → B fail) and fixes c "
           "(A fail → B pass). Under no real change b ~ Binomial(b + c, ½); p is the exact two-sided p-value. "
           "Template = the template group in run A.")
tests_df = pd.DataFrame(names.label_rows(tests, rest))
tests_df["template"] = tests_df["template"].map(fmt.template)
st.dataframe(fmt.no_none(tests_df), hide_index=True, column_config={
    "regressions": fmt.count_column("regressions (b)"),
    "fixes": fmt.count_column("fixes (c)"),
    "both_pass": fmt.count_column("both pass"),
    "both_fail": fmt.count_column("both fail"),
    "regressions_same_answer": fmt.count_column("regressions, same answer"),
    "fixes_same_answer": fmt.count_column("fixes, same answer"),
    "p_value": st.column_config.NumberColumn("McNemar p", format="%.4f"),
}, placeholder=fmt.MISSING)
names.pager(PROVIDER_PAGE, n_providers)

st.subheader("What flipped")


def side_by_side(rows: list[dict]) -> None:
    """Answer A and answer B of one flip of the page (picked below, kept in the URL as ?flip=ID), with the
    words that changed marked."""
    picks = {str(r["response_a"]): r for r in rows}
    pick = select_in_url("Answers side by side", "flip", list(picks), say_unknown=False, format_func=lambda rid: (
        f"{names.short(picks[rid]['question_id'], 30)} · {names.short(picks[rid]['provider'], 30)}"))
    if pick is None:
        return
    row = picks[pick]
    with store() as con:
        texts = q.answers(con, [row["response_a"], row["response_b"]])
    diff = word_diff.word_diff(texts.get(row["response_a"]), texts.get(row["response_b"]))
    left, right = st.columns(2)
    left.html(word_diff.panel(f"A — {charts.inert(names.short(run_a))} ({row['verdict_a']})", diff.a_html))
    right.html(word_diff.panel(f"B — {charts.inert(names.short(run_b))} ({row['verdict_b']})", diff.b_html))
    if diff.removed or diff.added:
        st.caption(f"{diff.removed} word(s) only in A (struck through), {diff.added} only in B (highlighted)"
                   + (f"; compared on the first {word_diff.MAX_WORDS:,} words" if diff.cut else "") + ".")
    else:
        st.caption("The same answer in both runs: the verdict changed, not the bot's words.")


tabs = st.tabs(list(TABS), key="flips", bind="query-params")
for tab, kind in zip(tabs, TABS.values(), strict=True):
    if not tab.open:  # only the open tab (in the URL) renders
        continue
    with tab:
        info = summary[kind]
        arrow = "pass → fail" if kind == "regressions" else "fail → pass"
        if not info["count"]:
            st.caption("No pairs to compare: the runs share no question." if pairing["paired"] == 0
                       else f"No {kind} ({arrow}).")
            continue
        st.caption(f"{info['count']:,} pairs went {arrow}: {info['answer_changed']:,} with a changed answer, "
                   f"{info['same_answer']:,} with the same answer (the evaluation or the inputs changed, not the bot).")
        rows_df = pd.DataFrame(lists[kind])
        rows_df["template"] = rows_df["template"].map(fmt.template)
        rows_df["A"] = rows_df["response_a"].map(lambda rid: review_link(rid, ida))
        rows_df["B"] = rows_df["response_b"].map(lambda rid: review_link(rid, idb))
        st.dataframe(fmt.no_none(rows_df[["A", "B", "question_id", "provider", "template", "cause", "check_diff",
                                          "question"]]),
                     hide_index=True,
                     column_config={"A": st.column_config.LinkColumn("A", display_text="Review A ↗",
                                                                     help="Run A's response in Review"),
                                    "B": st.column_config.LinkColumn("B", display_text="Review B ↗",
                                                                     help="Run B's response in Review"),
                                    "check_diff": st.column_config.TextColumn("checks changed (A → B)", width="large"),
                                    "cause": st.column_config.TextColumn("why", width="medium"),
                                    "question": st.column_config.TextColumn(width="large")}, placeholder=fmt.MISSING)
        pages = max(1, math.ceil(info["count"] / PAGE_SIZE))
        if pages > 1:
            st.pagination(pages, key=f"{kind}_page", bind="query-params")
        side_by_side(lists[kind])
