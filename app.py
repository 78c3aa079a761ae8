"""Streamlit entry point: the navigation over the pages of SPEC §8, which live in pages/.

The navigation is defined once, in dashboard/shell.py; each page calls
`dashboard.shell.served_by_app()` first, so that a fresh server's first request to a deep
link (/triage?run=…) renders inside this navigation too.
"""

from dashboard.shell import navigation

navigation().run()
