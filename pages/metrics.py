"""Metrics (SPEC §6, §8.6): TRUST-SCORE F1GR and F1AC per run x provider, components, refusal confusion matrix."""


import pandas as pd
import streamlit as st

from dashboard import charts, fmt, names
from dashboard.common import command, md, overrides_toggle, select_in_url, sidebar_run_picker, store, store_path
from dashboard.shell import served_by_app
from evaluator.queries import metrics as q

served_by_app()

LEGEND_BESIDE = 6  # runs whose legend fits beside the "All runs" chart; more go below it
LEGEND_PER_ROW = 5
LEGEND_ROW_PX = 24

CARDS = 8  # providers of the run with F1GR / F1AC cards (four a row); the tables list the whole page
HEATMAPS = 4  # providers of the run with a confusion-matrix chart; the table lists the whole page

st.title("Metrics")
st.caption("TRUST-SCORE (Song et al., ICLR 2025), computed once per run and provider. **F1GR** (grounded refusal) = "
           "mean of the F1 of refusing unanswerable questions and the F1 of answering answerable ones. **F1AC** "
           "(answer correctness) = harmonic mean of P_AC and R_AC, from the share of supported gold claims found in "
           "each answered, answerable response.")
with store() as con:
    run = sidebar_run_picker(con)
    if run is None:
        st.stop()
    judge = select_in_url("Refusal judge", "judge", q.judges(con), default=q.DEFAULT_JUDGE, container=st.sidebar)
    with_overrides = overrides_toggle("Results computed with reviewers' decisions on 'refused' winning over the judge.")
    # A ranked page of providers (most responses first) for all runs, and one for this run: a run of
    # 100k providers costs what 20 do.
    stored_for = {"judge": judge, "with_overrides": with_overrides}
    n_all, all_shown = names.ranked_page(
        "all_providers_page", lambda limit, offset: q.provider_ranking(con, **stored_for, limit=limit, offset=offset))
    everything = q.results(con, **stored_for, providers=all_shown)
    n_mine, mine_shown = names.ranked_page("run_providers_page", lambda limit, offset: q.provider_ranking(
        con, **stored_for, run_name=run, limit=limit, offset=offset))
    mine = q.results(con, **stored_for, run_name=run, providers=mine_shown)
    matrices = q.confusion(con, mine)
    gold = q.gold_shape(con, run)
can_compute = q.compute_available()

overrides_text = "with reviewers' refusal overrides" if with_overrides else "judge decisions only"
st.markdown(f"Judge **{md(judge)}**, {overrides_text}.")

if everything:
    st.subheader("All runs")
    table = pd.DataFrame([{"run": r["run"], "provider": r["provider"], "F1GR": r["f1gr"], "F1AC": r["f1ac"],
                           "computed at": r["computed_at"]} for r in everything])
    labels = names.chart_labels(all_shown)
    run_labels = names.chart_labels(table["run"].unique())
    long = (table.assign(provider=table["provider"].map(labels), run=table["run"].map(run_labels))
            .melt(id_vars=["run", "provider"], value_vars=["F1GR", "F1AC"], var_name="metric", value_name="value"))
    long["label"] = long["value"].map(lambda v: fmt.MISSING if pd.isna(v) else f"{v:.3f}")
    # A bar group per provider (at most TOP_N), a colour per run: Plotly's cost grows with the runs.
    fig = charts.bar(long, x="provider", y="value", color="run", barmode="group", facet_col="metric",
                     text="label", range_y=[0, 1.1], labels={"provider": "", "value": ""},
                     category_orders={"provider": list(labels.values()), "run": list(run_labels.values())})
    fig.update_traces(textposition="outside", textfont_size=12, cliponaxis=False)
    # Past a few runs the legend beside the chart scrolls: it goes below, in rows, and the chart grows.
    legend_rows = 0 if len(run_labels) <= LEGEND_BESIDE else -(-len(run_labels) // LEGEND_PER_ROW)
    if legend_rows:
        fig.update_layout(legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom",
                                  "yref": "container"})
    charts.titled(fig, height=340 + LEGEND_ROW_PX * legend_rows,
                  margin={"t": 40, "b": 10 + LEGEND_ROW_PX * legend_rows})
    st.plotly_chart(fig, key="metrics_all_chart")
    if n_all > len(all_shown):
        st.caption(f"{len(all_shown)} of {n_all:,} providers (most responses first); "
                   f"{names.rest_label(n_all - len(all_shown))} — page through them below the table. "
                   "Scores do not add up, so the others have no bar of their own.")
    st.dataframe(fmt.no_none(table), hide_index=True, column_config={
        "F1GR": st.column_config.NumberColumn(format="%.4f"), "F1AC": st.column_config.NumberColumn(format="%.4f")},
        placeholder=fmt.MISSING)
    names.pager("all_providers_page", n_all)

st.subheader(md(run))
if not mine:
    st.info(f"No TRUST-SCORE stored for run **{md(run)}** (judge {md(judge)}, {overrides_text}). Compute it "
            f"with:\n\n{command('metrics', '--run', run)}")
    if can_compute and st.button("Compute now (heuristic judge)", key="compute_metrics", type="primary"):
        with st.spinner(f"Computing TRUST-SCORE for {md(run)}…"):
            try:
                q.compute(store_path(), run, judge=q.DEFAULT_JUDGE, with_overrides=with_overrides)
            except Exception as exc:  # shown to the user, never swallowed
                st.error("Computing the metrics failed:")
                st.text(str(exc))
                st.stop()
        if judge != q.DEFAULT_JUDGE:
            st.query_params["judge"] = q.DEFAULT_JUDGE
        st.rerun()
    st.stop()

# F1AC that cannot mean what it seems is said so, not shown as a silent 0.0000.
f1ac_note = None
if not gold["claims"]:
    f1ac_note = (f"F1AC is not meaningful for {md(run)}: none of its {gold['questions']:,} questions carries gold "
                 "answers, so no answer can be found correct and F1AC is 0 by construction. Read F1GR.")
elif gold["median_words"] is not None and gold["median_words"] >= q.LONG_FORM_WORDS:
    f1ac_note = (f"F1AC is not meaningful for {md(run)}: its gold answers are long-form sentences (a typical "
                 f"claim is {gold['median_words']:.0f} words), and F1AC counts a claim only when it occurs "
                 "word for word (normalized) in the answer — a correct answer in other words scores 0. Read "
                 "F1GR; judge correctness with an LLM judge or the human labels.")
if f1ac_note:
    st.warning(f1ac_note, icon=":material/warning:")

cards = mine[:CARDS]
for start in range(0, len(cards), 4):
    row = cards[start:start + 4]
    for column, r in zip(st.columns(len(row) if len(cards) <= 4 else 4), row, strict=False):
        with column:
            text, full = names.heading(r["provider"])
            st.markdown(f"**{text}**", help=full)
            # Two cards side by side only when a provider has half the row: four providers a row leave
            # each ~190 px at 1280, where "0.9283" beside its twin is cut to "0…".
            left, right = st.columns(2) if len(row) <= 2 else (st.container(), st.container())
            left.metric("F1GR", "—" if r["f1gr"] is None else f"{r['f1gr']:.4f}", border=True)
            right.metric("F1AC", "—" if r["f1ac"] is None else f"{r['f1ac']:.4f}", border=True,
                         **({"delta": "not meaningful here", "delta_color": "off", "delta_arrow": "off",
                             "help": "See the warning above the cards."} if f1ac_note else {}))
if n_mine > len(cards):
    st.caption(f"Cards for {len(cards)} of the run's {n_mine:,} providers (most responses first); the tables "
               f"below list {len(mine)} at a time — page through them under the confusion matrix table.")

st.markdown("**Components**")
scores = {key: label for key, label in q.COMPONENTS.items() if not key.startswith("n_")}
counts = {key: label for key, label in q.COMPONENTS.items() if key.startswith("n_")}
left, right = st.columns([3, 2])
left.dataframe(
    pd.DataFrame({r["provider"]: [r["components"].get(key) for key in scores] for r in mine},
                 index=list(scores.values()), dtype="float"),
    column_config={r["provider"]: st.column_config.NumberColumn(format="%.4f") for r in mine}, placeholder=fmt.MISSING)
right.dataframe(
    pd.DataFrame({r["provider"]: [r["components"].get(key) for key in counts] for r in mine},
                 index=list(counts.values()), dtype="Int64"), placeholder=fmt.MISSING)
st.caption("P/R/F1 refused: precision and recall of refusing, against the unanswerable questions; answered: of "
           "answering, against the answerable ones. P_AC = Σ AC / answered, R_AC = Σ AC / answerable. "
           "A zero denominator gives 0.")

st.markdown("**Refusal confusion matrix**")
if not matrices:
    st.caption("No per-response refusal decisions stored for this run.")
else:
    charted = matrices[:HEATMAPS]
    titles = names.chart_labels(m["provider"] for m in charted)
    columns = st.columns(len(charted))
    for i, (column, m) in enumerate(zip(columns, charted, strict=True)):
        grid = [[m["refused_answerable"], m["refused_unanswerable"]],
                [m["answered_answerable"], m["answered_unanswerable"]]]
        fig = charts.heatmap(grid, x=["answerable", "unanswerable"], y=["refused", "answered"], text_auto=True,
                             color_continuous_scale="Blues", aspect="auto", title=titles[m["provider"]],
                             labels={"x": "the question is", "y": "the response", "color": "responses"})
        fig.update_layout(height=260, margin={"t": 40, "b": 10, "l": 10, "r": 10}, coloraxis_showscale=False)
        fig.update_traces(textfont_size=18)
        column.plotly_chart(fig, key=f"confusion_{i}")
    if len(matrices) > len(charted) or n_mine > len(matrices):
        st.caption(f"Charts for {len(charted)} of the run's {n_mine:,} providers; the table lists "
                   f"{len(matrices)} at a time.")
    st.dataframe(fmt.no_none(pd.DataFrame(matrices)), hide_index=True, column_order=[
        "provider", "refused_unanswerable", "answered_answerable", "refused_answerable", "answered_unanswerable",
        "reviewer_decisions", "source",
    ], column_config={
        "refused_unanswerable": st.column_config.NumberColumn("refused, unanswerable ✓"),
        "answered_answerable": st.column_config.NumberColumn("answered, answerable ✓"),
        "refused_answerable": st.column_config.NumberColumn("refused, answerable ✗"),
        "answered_unanswerable": st.column_config.NumberColumn("answered, unanswerable ✗"),
        "reviewer_decisions": st.column_config.NumberColumn("by a reviewer"),
        "source": st.column_config.TextColumn("counted from"),
    }, placeholder=fmt.MISSING)
    st.caption("✓ = the right call (refuse what cannot be answered, answer what can); ✗ = a wrong refusal or a "
               "missed one.")
names.pager("run_providers_page", n_mine)
