"""Streamlit entry point: navigation over the pages of SPEC §8."""

import streamlit as st

st.set_page_config(page_title="RAG evaluation review", page_icon=":material/fact_check:", layout="wide")

PAGES = {
    "For PMs": [
        st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True,
                url_path="overview"),
        st.Page("pages/before_after.py", title="Before/after", icon=":material/compare_arrows:",
                url_path="before_after"),
        st.Page("pages/compare_runs.py", title="Compare runs", icon=":material/difference:", url_path="compare"),
        st.Page("pages/metrics.py", title="Metrics", icon=":material/analytics:", url_path="metrics"),
    ],
    "For reviewers": [
        st.Page("pages/triage.py", title="Triage", icon=":material/filter_list:", url_path="triage"),
        st.Page("pages/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
    ],
}

st.navigation(PAGES).run()
