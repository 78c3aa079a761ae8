"""Overview (SPEC §8.1): runs in the store, pass rates per run x provider x template, check verdicts, flags."""


import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard.common import TEMPLATE_LABELS, code, md, overrides_toggle, select_in_url, sidebar_run_picker, store
from evaluator.queries import overview as q

VERDICT_COLORS = {"PASS": "#2e7d32", "FAIL": "#c62828", "N/A": "#9e9e9e"}


st.title("Overview")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    ruleset = select_in_url("Evaluation", "eval", q.rulesets(con), default="t3_aware", container=st.sidebar)
    with_overrides = overrides_toggle()
    runs = q.runs_table(con)
    rates, missing = q.pass_rates_by_run(con, ruleset, with_overrides=with_overrides) if ruleset else ([], [])
    evaluation = q.latest_evaluation(con, run, ruleset) if ruleset else None
    checks = q.check_counts(con, evaluation["evaluation_id"], with_overrides=with_overrides) if evaluation else []
    flags, flag_source = q.flag_counts(con, evaluation["evaluation_id"]) if evaluation else ([], None)
    flag_source_info = q.evaluation_info(con, flag_source) if flag_source is not None else None

verdicts = "effective verdicts (reviewer overrides applied)" if with_overrides else "computed verdicts"
st.caption(f"Evaluation **{md(ruleset)}**, {verdicts}. A response passes when every check that is not N/A "
           "passed. The view is in the URL: copy it to share.")

st.subheader("Runs")
st.dataframe(pd.DataFrame(runs), hide_index=True)
if ruleset is None:
    st.info("No run has been evaluated yet: `python -m evaluator recompute --run RUN --ruleset t3_aware`.")
    st.stop()

st.subheader(f"Pass rates under {md(ruleset)}")
if missing:
    st.caption(f"Not evaluated under {md(ruleset)}: {', '.join(md(m) for m in missing)}.")
if not rates:
    st.info(f"No run has a {md(ruleset)} evaluation yet: "
            f"{code(f'python -m evaluator recompute --run RUN --ruleset {ruleset}')}.")
else:
    rates_df = pd.DataFrame(rates)
    rates_df["template"] = rates_df["template"].replace(TEMPLATE_LABELS)
    fig = px.bar(
        rates_df, x="run", y="pass_rate", color="provider", barmode="group", facet_col="template",
        range_y=[0, 1.1], custom_data=["passed", "n", "ci_low", "ci_high"],
        error_y=rates_df["ci_high"] - rates_df["pass_rate"], error_y_minus=rates_df["pass_rate"] - rates_df["ci_low"],
        labels={"pass_rate": "pass rate", "run": ""},
        category_orders={"template": ["T1", "T2", "T3", "no template"]},
    )
    fig.update_yaxes(tickformat=".0%")
    fig.update_xaxes(matches=None)  # each template panel lists only the runs that have it
    fig.update_traces(
        texttemplate="%{y:.0%}", textposition="inside", insidetextanchor="start", textangle=0,
        textfont_size=11, error_y_color="#555",
        hovertemplate="%{x}: %{y:.1%} (%{customdata[0]}/%{customdata[1]}), "
                      "95% CI %{customdata[2]:.1%}–%{customdata[3]:.1%}<extra>%{fullData.name}</extra>",
    )
    fig.for_each_annotation(lambda a: a.update(text=a.text.replace("template=", "")))
    fig.update_layout(height=380, margin={"t": 40, "b": 10}, legend_title_text="provider",
                      uniformtext_minsize=9, uniformtext_mode="hide")
    st.plotly_chart(fig, key="pass_rates_chart")
    st.caption("Bars: share of responses that pass; whiskers: 95% Wilson interval.")
    st.dataframe(
        rates_df[["run", "provider", "template", "n", "passed", "pass_rate", "ci_low", "ci_high"]],
        hide_index=True,
        column_config={"pass_rate": st.column_config.NumberColumn("pass rate", format="percent"),
                       "ci_low": st.column_config.NumberColumn("95% CI low", format="percent"),
                       "ci_high": st.column_config.NumberColumn("95% CI high", format="percent")},
    )

st.subheader(f"Checks of {md(run)}")
if evaluation is None:
    st.info(f"Run {md(run)} has no {md(ruleset)} evaluation: "
            f"{code(f'python -m evaluator recompute --run {run} --ruleset {ruleset}')}.")
else:
    checks_df = pd.DataFrame(checks)
    long = (checks_df.melt(id_vars=["provider", "template", "check"], value_vars=["pass", "fail", "na"],
                           var_name="verdict", value_name="responses")
            .replace({"verdict": {"pass": "PASS", "fail": "FAIL", "na": "N/A"}})
            .groupby(["provider", "check", "verdict"], as_index=False)["responses"].sum())
    fig = px.bar(
        long, y="check", x="responses", color="verdict", facet_col="provider", orientation="h",
        color_discrete_map=VERDICT_COLORS, text="responses",
        category_orders={"check": list(q.CHECK_ORDER), "verdict": list(VERDICT_COLORS)},
    )
    fig.for_each_annotation(lambda a: a.update(text=a.text.replace("provider=", "")))
    fig.update_layout(height=320, margin={"t": 40, "b": 10}, yaxis_title="")
    st.plotly_chart(fig, key="checks_chart")
    checks_df["template"] = checks_df["template"].replace(TEMPLATE_LABELS)
    st.dataframe(checks_df.rename(columns={"pass": "PASS", "fail": "FAIL", "na": "N/A"}), hide_index=True)

    st.subheader(f"Flags of {md(run)}")
    if flag_source_info is not None and flag_source != evaluation["evaluation_id"]:
        st.caption(f"Recorded verdicts carry no flags; these come from the run's {md(flag_source_info['ruleset'])} "
                   f"evaluation #{flag_source}.")
    if not flags:
        st.info("No flags raised." if flag_source is not None else
                f"No computed evaluation of {md(run)} yet, so no flags: "
                f"{code(f'python -m evaluator recompute --run {run} --ruleset t3_aware')}.")
    else:
        flags_df = pd.DataFrame(flags)
        fig = px.bar(flags_df, x="flag", y="count", color="provider", barmode="group", text="count")
        fig.update_layout(height=300, margin={"t": 20, "b": 10}, xaxis_title="")
        st.plotly_chart(fig, key="flags_chart")
        st.dataframe(flags_df.pivot_table(index="flag", columns="provider", values="count", aggfunc="sum",
                                          fill_value=0).astype(int))
