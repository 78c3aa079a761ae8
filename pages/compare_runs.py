"""Placeholder until this page is built."""

import streamlit as st

st.title("compare_runs")
st.info("This page is being built.")
