"""Overview: the runs in the store (PM pages extend this with pass rates and charts)."""

import pandas as pd
import streamlit as st

from dashboard.common import store
from evaluator.queries.runs import list_runs

st.title("Overview")
with store() as con:
    runs = list_runs(con)
if not runs:
    st.info("No runs in the store yet. Load one with `python -m evaluator ingest FILE`.")
else:
    st.dataframe(pd.DataFrame(runs), hide_index=True, use_container_width=True)
