"""Streamlit helpers shared by the pages: sidebar, store access, URL state. No SQL here."""
