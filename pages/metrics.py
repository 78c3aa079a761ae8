"""Placeholder until this page is built."""

import streamlit as st

st.title("metrics")
st.info("This page is being built.")
