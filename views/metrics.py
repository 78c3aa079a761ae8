"""Metrics (SPEC §6, §8.6): TRUST-SCORE F1GR and F1AC per run x provider, components, refusal confusion matrix."""


import pandas as pd
import plotly.express as px
import streamlit as st

from dashboard.common import code, md, overrides_toggle, select_in_url, sidebar_run_picker, store, store_path
from evaluator.queries import metrics as q

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
    everything = q.results(con, judge=judge, with_overrides=with_overrides)
    mine = [r for r in everything if r["run"] == run]
    matrices = q.confusion(con, mine)
can_compute = q.compute_available()

overrides_text = "with reviewers' refusal overrides" if with_overrides else "judge decisions only"
st.markdown(f"Judge **{md(judge)}**, {overrides_text}.")

if everything:
    st.subheader("All runs")
    table = pd.DataFrame([{"run": r["run"], "provider": r["provider"], "F1GR": r["f1gr"], "F1AC": r["f1ac"],
                           "computed at": r["computed_at"]} for r in everything])
    long = table.melt(id_vars=["run", "provider"], value_vars=["F1GR", "F1AC"], var_name="metric", value_name="value")
    fig = px.bar(long, x="run", y="value", color="provider", barmode="group", facet_col="metric",
                 text=long["value"].map(lambda v: "—" if pd.isna(v) else f"{v:.3f}"), range_y=[0, 1.1],
                 labels={"run": "", "value": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.for_each_annotation(lambda a: a.update(text=a.text.replace("metric=", "")))
    fig.update_layout(height=340, margin={"t": 40, "b": 10})
    st.plotly_chart(fig, key="metrics_all_chart")
    st.dataframe(table, hide_index=True, column_config={
        "F1GR": st.column_config.NumberColumn(format="%.4f"), "F1AC": st.column_config.NumberColumn(format="%.4f")})

st.subheader(md(run))
if not mine:
    st.info(f"No TRUST-SCORE stored for run **{md(run)}** (judge {md(judge)}, {overrides_text}). Compute it "
            f"with:\n\n{code(f'python -m evaluator metrics --run {run}')}")
    if can_compute and st.button("Compute now (heuristic judge)", key="compute_metrics", type="primary"):
        with st.spinner(f"Computing TRUST-SCORE for {run}…"):
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

columns = st.columns(len(mine))
for column, r in zip(columns, mine, strict=True):
    with column:
        st.markdown(f"**{md(r['provider'])}**")
        left, right = st.columns(2)
        left.metric("F1GR", "—" if r["f1gr"] is None else f"{r['f1gr']:.4f}", border=True)
        right.metric("F1AC", "—" if r["f1ac"] is None else f"{r['f1ac']:.4f}", border=True)

st.markdown("**Components**")
scores = {key: label for key, label in q.COMPONENTS.items() if not key.startswith("n_")}
counts = {key: label for key, label in q.COMPONENTS.items() if key.startswith("n_")}
left, right = st.columns([3, 2])
left.dataframe(
    pd.DataFrame({r["provider"]: [r["components"].get(key) for key in scores] for r in mine},
                 index=list(scores.values()), dtype="float"),
    column_config={r["provider"]: st.column_config.NumberColumn(format="%.4f") for r in mine},
)
right.dataframe(
    pd.DataFrame({r["provider"]: [r["components"].get(key) for key in counts] for r in mine},
                 index=list(counts.values()), dtype="Int64"),
)
st.caption("P/R/F1 refused: precision and recall of refusing, against the unanswerable questions; answered: of "
           "answering, against the answerable ones. P_AC = Σ AC / answered, R_AC = Σ AC / answerable. "
           "A zero denominator gives 0.")

st.markdown("**Refusal confusion matrix**")
if not matrices:
    st.caption("No per-response refusal decisions stored for this run.")
else:
    columns = st.columns(len(matrices))
    for column, m in zip(columns, matrices, strict=True):
        grid = [[m["refused_answerable"], m["refused_unanswerable"]],
                [m["answered_answerable"], m["answered_unanswerable"]]]
        fig = px.imshow(grid, x=["answerable", "unanswerable"], y=["refused", "answered"], text_auto=True,
                        color_continuous_scale="Blues", aspect="auto", title=m["provider"],
                        labels={"x": "the question is", "y": "the response", "color": "responses"})
        fig.update_layout(height=260, margin={"t": 40, "b": 10, "l": 10, "r": 10}, coloraxis_showscale=False)
        fig.update_traces(textfont_size=18)
        column.plotly_chart(fig, key=f"confusion_{m['provider']}")
    st.dataframe(pd.DataFrame(matrices), hide_index=True, column_order=[
        "provider", "refused_unanswerable", "answered_answerable", "refused_answerable", "answered_unanswerable",
        "reviewer_decisions", "source",
    ], column_config={
        "refused_unanswerable": st.column_config.NumberColumn("refused, unanswerable ✓"),
        "answered_answerable": st.column_config.NumberColumn("answered, answerable ✓"),
        "refused_answerable": st.column_config.NumberColumn("refused, answerable ✗"),
        "answered_unanswerable": st.column_config.NumberColumn("answered, unanswerable ✗"),
        "reviewer_decisions": st.column_config.NumberColumn("by a reviewer"),
        "source": st.column_config.TextColumn("counted from"),
    })
    st.caption("✓ = the right call (refuse what cannot be answered, answer what can); ✗ = a wrong refusal or a "
               "missed one.")
