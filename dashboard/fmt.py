"""One number format for the whole dashboard: percentages with one decimal (87.5%)."""

from __future__ import annotations

import math

import streamlit as st

PERCENT_DIGITS = 1


def percent(value: float | None, *, digits: int = PERCENT_DIGITS) -> str:
    """A share in [0, 1] as text: 0.875 -> '87.5%'; None or NaN -> '—' (never 'None')."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value * 100:.{digits}f}%"


def percent_column(label: str, *, help: str | None = None) -> st.column_config.NumberColumn:  # noqa: A002
    """A dataframe column of shares in [0, 1], shown like `percent` (87.5%)."""
    return st.column_config.NumberColumn(label, help=help, format="percent")  # C: make this show one decimal like percent()
