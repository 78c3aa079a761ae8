"""Streamlit entry point: navigation over the pages of SPEC §8.

The page scripts live in views/, not pages/: Streamlit treats a pages/ folder as the legacy
multipage mechanism and serves its files directly on a fresh server's first request,
before st.navigation has taken over routing.
"""

import streamlit as st

st.set_page_config(page_title="RAG evaluation review", page_icon=":material/fact_check:", layout="wide")

PAGES = {
    "For PMs": [
        # The default page is served at "/".
        st.Page("views/overview.py", title="Overview", icon=":material/dashboard:", default=True),
        st.Page("views/before_after.py", title="Before/after", icon=":material/compare_arrows:",
                url_path="before_after"),
        st.Page("views/compare_runs.py", title="Compare runs", icon=":material/difference:", url_path="compare"),
        st.Page("views/metrics.py", title="Metrics", icon=":material/analytics:", url_path="metrics"),
    ],
    "For reviewers": [
        st.Page("views/triage.py", title="Triage", icon=":material/filter_list:", url_path="triage"),
        st.Page("views/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
    ],
}

st.navigation(PAGES).run()
