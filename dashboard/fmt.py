"""One number format for the whole dashboard: percentages with one decimal (87.5%), and no 'None' cells."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pandas as pd
import streamlit as st

PERCENT_DIGITS = 1
MISSING = "—"  # an empty cell, never 'None'
# Plotly's d3 format for the same percentages (bar texts, hover)
PLOTLY_PERCENT = f".{PERCENT_DIGITS}%"
NO_TEMPLATE = "no template"  # the template group of responses without one (stored as 'none')


def percent(value: float | None, *, digits: int = PERCENT_DIGITS) -> str:
    """A share in [0, 1] as text: 0.875 -> '87.5%'; None or NaN -> '—' (never 'None')."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{_half_up(value * 100, digits)}%"


def _half_up(value: float, digits: int) -> Decimal:
    """Rounded half up, like the browser (JavaScript's toFixed, Intl): 93.75 -> 93.8, 6.25 -> 6.3."""
    return Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)


def share(value: float | None) -> float | None:
    """A share rounded (half up) to the digits a percent shows, for a `percent_column`: Streamlit cuts
    a number to its column's step (0.9375 -> 0.937 -> '93.7%'); rounded first it shows '93.8%', as
    `percent` does."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(_half_up(value, PERCENT_DIGITS + 2))


def shares(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """The frame with these share columns rounded like `share` (give it to st.dataframe with percent_column)."""
    out = frame.copy()
    for column in columns:
        out[column] = out[column].map(share).astype("float64")
    return out


def counts(*columns: str) -> dict[str, Any]:
    """Dataframe column config showing these count columns with thousands separators, in the reader's
    locale (1,000,000 responses; Streamlit shows a bare 1000000 otherwise). Not for ids. (A column named
    "_index", a provider's name say, is left alone: Streamlit reads that key as the table's index.)"""
    return {column: count_column() for column in columns if column != "_index"}


def count_column(label: str | None = None) -> Any:
    """One count column (see ``counts``), under ``label``."""
    return st.column_config.NumberColumn(label, format="localized")


def percent_column(label: str | None = None, *, help: str | None = None) -> Any:  # noqa: A002
    """A dataframe column of shares in [0, 1], shown like `percent` (87.5%, 100.0%); round the values with
    `shares` first.

    Streamlit 1.67's "percent" format shows 0–2 decimals (Intl.NumberFormat: '87.5%', '100%', '67.56%')
    unless the column has a step: then it cuts the value to the step's decimals (truncating) and shows
    them minus two, so step 0.001 gives exactly one decimal."""
    return st.column_config.NumberColumn(label, help=help, format="percent", step=10.0 ** -(PERCENT_DIGITS + 2))


def template(value: object) -> str:
    """A template group for display: 'none' (no template recorded) -> 'no template', also inside 'T3 → none'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return " → ".join(NO_TEMPLATE if part == "none" else part for part in str(value).split(" → "))


def no_none(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every missing text cell shown as '—' (Streamlit shows a missing cell as 'None');
    number and date columns keep their type (a missing number stays an empty cell)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_object_dtype(out[column]) or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].astype(object).where(out[column].notna(), MISSING)
    return out


def score(value: object) -> str:
    """A score a run file carries, as a reviewer reads it: 0.6071428571428571 -> '0.607'; other
    values (text, lists, a score per annotator) as the file gave them."""
    if isinstance(value, float) and math.isfinite(value):
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if value == 0 or abs(value) >= 0.001 else f"{value:.2e}"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
