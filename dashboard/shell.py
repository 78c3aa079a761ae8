"""The app's navigation, one definition, and the guard that keeps every page inside it.

Streamlit still carries its legacy multipage mode: when a folder named `pages/` sits beside
the main script, a fresh server's first session (and every AppTest run) first runs the
requested page file directly (`_mpa_v1`), without app.py's `st.navigation`, page config or
page titles. Only after some script has called `st.navigation` does Streamlit route through
the app.

A page that finds itself run that way installs the app's navigation. On a session's first
run it then reruns at once, before any widget exists: widgets created in a legacy-mode run get
other ids than the same widgets in the app's routing, so a form filled in on that first page
would lose its first submit. Later runs of a session (only AppTest resets the legacy mode for
every run) go on rendering in place, so a click that arrived with the run is not lost.
Streamlit derives a page's hash from its url path and each file in pages/ is named after its
url path, so both modes agree on which page this is, and the rerun keeps the query string.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage
from streamlit.runtime.pages_manager import PagesManager

ROOT = Path(__file__).resolve().parents[1]
FAVICON = ROOT / "dashboard" / "static" / "favicon.png"  # served by the app itself: no font host

# A headline number is read whole or not at all: Streamlit cuts an st.metric's label and value
# with an ellipsis when its column is narrow (1280 px, three or four columns). Let them wrap at
# their spaces instead ("12.5% →" over "100.0%"), never inside a word.
METRIC_CSS = """<style>
[data-testid="stMetric"] [data-testid="stMarkdownContainer"],
[data-testid="stMetric"] [data-testid="stMarkdownContainer"] p {
  white-space: normal; overflow: visible; text-overflow: clip; overflow-wrap: normal;
}
[data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p { line-height: 1.15; }
</style>"""


def _pages() -> dict[str, list[StreamlitPage]]:
    def page(name: str, title: str, icon: str) -> StreamlitPage:
        # url path = file name: the legacy mode and the app then agree on the page (see above)
        return st.Page(str(ROOT / "pages" / f"{name}.py"), title=title, icon=f":material/{icon}:", url_path=name)

    return {
        "For PMs": [
            # The default page is served at "/".
            st.Page(str(ROOT / "pages" / "overview.py"), title="Overview", icon=":material/dashboard:",
                    default=True),
            page("before_after", "Before/after", "compare_arrows"),
            page("compare", "Compare runs", "difference"),
            page("metrics", "Metrics", "analytics"),
            page("rule_lab", "Rule lab", "science"),
        ],
        "For reviewers": [
            page("triage", "Triage", "filter_list"),
            page("review", "Review", "rate_review"),
            # annotators' ratings vs each other and vs the checks (url /agreement, as before); Triage's
            # "Reviewer overrides vs evaluator" tab is the reviewers' side
            page("agreement", "Human labels", "groups"),
        ],
    }


def navigation() -> StreamlitPage:
    """Page config and navigation of the app; returns the page the URL asks for."""
    st.set_page_config(page_title="RAG evaluation review", page_icon=str(FAVICON), layout="wide")
    st.html(METRIC_CSS)  # style only: Streamlit puts it out of the page flow
    return st.navigation(_pages())


FIRST_RUN_DONE = "_served_by_app"  # session state: this session has had its first run


def served_by_app() -> None:
    """Call first in every page script."""
    first_run = not st.session_state.get(FIRST_RUN_DONE)
    st.session_state[FIRST_RUN_DONE] = True
    if PagesManager.uses_pages_directory:
        navigation()
        if first_run:
            st.rerun()
