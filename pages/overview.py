"""Overview (SPEC §8.1): runs in the store, pass rates per run x provider x template, check verdicts, flags."""


import pandas as pd
import streamlit as st

from dashboard import charts, fmt, names
from dashboard.common import command, md, overrides_toggle, recompute_hint, select_in_url, sidebar_run_picker, store
from dashboard.shell import served_by_app
from evaluator.queries import overview as q

served_by_app()

VERDICT_COLORS = {"PASS": "#2e7d32", "FAIL": "#c62828", "N/A": "#9e9e9e"}
FACETS = 4  # providers with their own panel in the checks chart; the page's others share one
PROVIDER_PAGE = "providers_page"
BAR_PX = 22  # height of one bar of the pass-rate chart: the chart grows with runs x providers, never slivers


def runs_in_chart(picked: str, all_runs: list[str]) -> list[str]:
    """The picked run and the others chosen to chart beside it, kept in the URL (?with=NAME&with=NAME)."""
    others = [name for name in all_runs if name != picked]
    wanted = [name for name in st.query_params.get_all("with") if name in others]
    key, seen = "url_with", "url_seen_with"
    if key not in st.session_state or wanted != st.session_state.get(seen, wanted):
        st.session_state[key] = wanted  # a shared link wins over the widget's own state
    chosen = st.sidebar.multiselect("Also chart these runs", others, key=key, format_func=names.short,
                                    help="The pass-rate chart and table show the picked run and these.")
    if chosen != st.query_params.get_all("with"):
        st.query_params["with"] = chosen
    st.session_state[seen] = chosen
    return [picked, *chosen]


st.title("Overview")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    ruleset = select_in_url("Evaluation", "eval", q.rulesets(con), default="t3_aware", container=st.sidebar)
    with_overrides = overrides_toggle()
    runs = q.runs_table(con)
    charted = runs_in_chart(run, [r["name"] for r in runs])
    evaluation = q.latest_evaluation(con, run, ruleset) if ruleset else None
    # One ranked page of the run's providers (most responses first) for every chart and table below;
    # the others are summed into one "… and N more" row, so a run of 100k providers costs what 20 do.
    every_run = ([eid for eid, name in q.latest_evaluations(con, ruleset).items() if name in set(charted)]
                 if ruleset else [])
    ranked_over = [evaluation["evaluation_id"]] if evaluation else every_run
    n_providers, shown = names.ranked_page(
        PROVIDER_PAGE, lambda limit, offset: q.provider_ranking(con, ranked_over, limit=limit, offset=offset))
    typed = (names.name_filter("providers", label="Providers: type to filter", container=st.sidebar)
             if n_providers > names.TOP_N else "")
    n_listed = n_providers
    if st.session_state.get("providers_typed", typed) != typed:  # a new filter starts at its first page
        st.session_state[PROVIDER_PAGE] = 1
    st.session_state["providers_typed"] = typed
    if typed:
        n_listed, shown = names.ranked_page(PROVIDER_PAGE, lambda limit, offset: q.provider_ranking(
            con, ranked_over, limit=limit, offset=offset, contains=typed))
    rest = n_providers - len(shown)
    # the pass rates cover every charted run: their rest also holds the providers of the other runs
    rest_all = (q.provider_ranking(con, every_run, limit=0)[0] if len(every_run) > 1 else n_providers) - len(shown)
    shown_rows = {"providers": shown, "rest": True}
    rates, missing = (q.pass_rates_by_run(con, ruleset, with_overrides=with_overrides, runs=charted, **shown_rows)
                      if ruleset else ([], []))
    checks = (q.check_counts(con, evaluation["evaluation_id"], with_overrides=with_overrides, **shown_rows)
              if evaluation else [])
    flags, flag_source = q.flag_counts(con, evaluation["evaluation_id"], **shown_rows) if evaluation else ([], None)
    flag_source_info = q.evaluation_info(con, flag_source) if flag_source is not None else None
    run_rulesets = q.rulesets(con, run)

def no_evaluation_hint(name: str, wanted: str) -> str:
    """How to give run `name` the evaluation `wanted` (recorded verdicts come only from a run file)."""
    if wanted == "recorded":
        return (f"Recorded verdicts come from the run file, and {md(name)}'s carried none. "
                + recompute_hint(name, run_rulesets))
    return f"Evaluate {md(name)} under {md(wanted)}: {command('recompute', '--run', name, '--ruleset', wanted)}."


labels = names.chart_labels(shown, rest)  # the run's charts
labels_all = names.chart_labels(shown, rest_all)  # the pass rates of every charted run


def provider_pages() -> None:
    """Which providers the charts and tables show, and the pager through them (only when there are many)."""
    if n_providers <= names.TOP_N:
        return
    matching = f" matching “{md(names.short(typed, 20))}”" if typed else ""
    st.caption(f"{md(run)} has {n_providers:,} providers{' — ' + format(n_listed, ',') + matching if typed else ''}"
               f": each chart and table shows {len(shown)} of them (most responses in {md(run)} first) and sums "
               "the others in one “… and N more providers” row. Page through them below or type to filter "
               "in the sidebar.")

verdicts = "effective verdicts (reviewer overrides applied)" if with_overrides else "computed verdicts"
st.caption(f"Evaluation **{md(ruleset)}**, {verdicts}. A response passes when every check that is not N/A "
           "passed. The view is in the URL: copy it to share.")

st.subheader("Runs")
st.dataframe(fmt.no_none(pd.DataFrame(runs)), hide_index=True, placeholder=fmt.MISSING,
             column_config=fmt.counts("responses", "providers", "questions"))
if ruleset is None:
    st.info(f"No run has been evaluated yet. {recompute_hint(run, [])}")
    st.stop()

st.subheader(f"Pass rates under {md(ruleset)}")
if len(charted) > 1:
    st.caption(f"{md(run)} and {len(charted) - 1} more run(s) chosen in the sidebar.")
if missing:
    st.caption(f"Not evaluated under {md(ruleset)}: {', '.join(md(m) for m in missing)}.")
if not rates:
    st.info(f"No run has a {md(ruleset)} evaluation yet. " + no_evaluation_hint(run, ruleset))
else:
    provider_pages()
    rates_df = pd.DataFrame(rates)
    rates_df["template"] = rates_df["template"].map(fmt.template)
    run_labels = names.chart_labels(rates_df["run"].unique())
    chart_df = rates_df.assign(provider=rates_df["provider"].map(lambda p: labels_all.get(p, labels_all.get(None))),
                               run=rates_df["run"].map(run_labels),
                               full=charts.hover_names(rates_df["provider"].map(
                                   lambda p: p if p is not None else labels_all.get(None))),
                               full_run=charts.hover_names(rates_df["run"]),
                               label=rates_df["pass_rate"].map(fmt.percent))
    # Horizontal bars, a panel per template, one bar per provider x run: the chart grows with the runs
    # and the providers (at most TOP_N and the rest), so ten runs are ten readable bars, not slivers.
    bars = chart_df.groupby("template").size().max() if len(chart_df) else 1
    fig = charts.bar(
        chart_df, y="provider", x="pass_rate", color="run", barmode="group", facet_col="template",
        orientation="h", range_x=[0, 1.15], text="label",
        custom_data=["passed", "n", "ci_low", "ci_high", "full", "full_run"],
        error_x=chart_df["ci_high"] - chart_df["pass_rate"], error_x_minus=chart_df["pass_rate"] - chart_df["ci_low"],
        labels={"pass_rate": "pass rate", "provider": ""},
        category_orders={"template": charts.template_panels(chart_df["template"]),
                         "provider": list(labels_all.values()),
                         "run": list(run_labels.values())},
    )
    fig.update_xaxes(tickformat=".0%")
    fig.update_yaxes(autorange="reversed")  # the first provider (most responses) on top
    fig.update_traces(
        textposition="inside", insidetextanchor="start", textangle=0, textfont_size=11, error_x_color="#555",
        hovertemplate=f"%{{customdata[4]}} · %{{customdata[5]}}: %{{x:{fmt.PLOTLY_PERCENT}}} "
                      f"(%{{customdata[0]}}/%{{customdata[1]}}), 95% CI %{{customdata[2]:{fmt.PLOTLY_PERCENT}}}–"
                      f"%{{customdata[3]:{fmt.PLOTLY_PERCENT}}}<extra></extra>",
    )
    charts.titled(fig, legend="run", height=max(300, 110 + int(bars) * BAR_PX), margin={"t": 40, "b": 10})
    st.plotly_chart(fig, key="pass_rates_chart")
    st.caption("Bars: share of responses that pass; whiskers: 95% Wilson interval.")
    rates_df = pd.DataFrame(names.label_rows(rates_df.to_dict("records"), rest_all))
    st.dataframe(
        fmt.shares(fmt.no_none(rates_df[["run", "provider", "template", "n", "passed", "pass_rate", "ci_low",
                                          "ci_high"]]), ["pass_rate", "ci_low", "ci_high"]),
        hide_index=True,
        column_config={**fmt.counts("n", "passed"), "pass_rate": fmt.percent_column("pass rate"),
                       "ci_low": fmt.percent_column("95% CI low"),
                       "ci_high": fmt.percent_column("95% CI high")}, placeholder=fmt.MISSING)
    names.pager(PROVIDER_PAGE, n_listed)

st.subheader(f"Checks of {md(run)}")
if evaluation is None:
    st.info(f"Run {md(run)} has no {md(ruleset)} evaluation. " + no_evaluation_hint(run, ruleset))
else:
    checks_df = pd.DataFrame(checks)
    # A panel each for the first FACETS providers shown; the others (and the rest) share one.
    panel_labels = names.chart_labels(shown[:FACETS], n_providers - len(shown[:FACETS]))
    panels = [label for label in panel_labels.values() if label in set(
        checks_df["provider"].map(lambda p: panel_labels.get(p, panel_labels.get(None))))]
    long = (checks_df.assign(provider=checks_df["provider"].map(lambda p: panel_labels.get(p, panel_labels.get(None))))
            .melt(id_vars=["provider", "template", "check"], value_vars=["pass", "fail", "na"],
                  var_name="verdict", value_name="responses")
            .replace({"verdict": {"pass": "PASS", "fail": "FAIL", "na": "N/A"}})
            .groupby(["provider", "check", "verdict"], as_index=False)["responses"].sum())
    checks_in_data = list(dict.fromkeys([*q.CHECK_ORDER, *long["check"]]))  # a run file may name others
    fig = charts.bar(
        long, y="check", x="responses", color="verdict", facet_col="provider", orientation="h",
        color_discrete_map=VERDICT_COLORS, text="responses",
        category_orders={"check": checks_in_data, "verdict": list(VERDICT_COLORS), "provider": panels},
    )
    charts.titled(fig, height=max(320, 80 + 34 * len(checks_in_data)), margin={"t": 40, "b": 10}, yaxis_title="")
    st.plotly_chart(fig, key="checks_chart")
    if n_providers > FACETS:
        st.caption(f"A panel each for the first {min(FACETS, len(shown))} providers of the page; the other "
                   f"{n_providers - min(FACETS, len(shown)):,} share the last one. The table lists the page's "
                   "providers one by one.")
    checks_df["template"] = checks_df["template"].map(fmt.template)
    checks_df = fmt.no_none(pd.DataFrame(names.label_rows(checks_df.to_dict("records"), rest)))
    st.dataframe(checks_df.rename(columns={"pass": "PASS", "fail": "FAIL", "na": "N/A"}),
                 hide_index=True, placeholder=fmt.MISSING, column_config=fmt.counts("PASS", "FAIL", "N/A"))

    st.subheader(f"Flags of {md(run)}")
    if flag_source_info is not None and flag_source != evaluation["evaluation_id"]:
        st.caption(f"Recorded verdicts carry no flags; these come from the run's {md(flag_source_info['ruleset'])} "
                   f"evaluation #{flag_source}.")
    if not flags:
        st.info("No flags raised." if flag_source is not None else
                f"No computed evaluation of {md(run)} yet, so no flags. {recompute_hint(run, run_rulesets)}")
    else:
        flags_df = pd.DataFrame(flags)
        chart_df = flags_df.assign(provider=flags_df["provider"].map(lambda p: labels.get(p, labels.get(None))))
        fig = charts.bar(chart_df, x="provider", y="count", color="flag", barmode="group", text="count",
                         category_orders={"provider": list(labels.values())})
        charts.titled(fig, height=300, margin={"t": 20, "b": 10}, xaxis_title="")
        st.plotly_chart(fig, key="flags_chart")
        flags_df = pd.DataFrame(names.label_rows(flags_df.to_dict("records"), rest))
        columns = list(dict.fromkeys(flags_df["provider"]))  # the page's providers in rank order, the rest last
        st.dataframe(flags_df.pivot_table(index="flag", columns="provider", values="count", aggfunc="sum",
                                          fill_value=0).astype(int)[columns], placeholder=fmt.MISSING,
                     column_config=fmt.counts(*columns))
