"""Placeholder until this page is built."""

import streamlit as st

st.title("before_after")
st.info("This page is being built.")
