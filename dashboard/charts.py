"""Plotly charts whose every string from the store is inert text: the one way data enters a chart.

Plotly renders a subset of HTML in any text it draws — titles, legends, axis ticks, facet titles,
annotations, bar texts and hover labels (`<a href>`, `<span style>`, `<b>`, `<br>`, …). It splits a
text at its tags first and only then decodes the entities, so `&lt;b&gt;` shows as the characters
`<b>`. Every text cell of a chart's frame, its category orders, labels and title are therefore
HTML-escaped here, once, before Plotly Express sees them: the values Plotly bakes into legends,
facet titles and default hover templates are already escaped. Pages pass raw (shortened) names;
our own markup lives only in hover/text templates, which take numbers and these escaped values.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from dashboard.names import short

HOVER_WIDTH = 200  # characters of a name in a hover label (the table cell holds it whole)


def inert(text: object) -> str:
    """Text Plotly shows literally: '&', '<', '>' as entities (None -> '')."""
    return html.escape("" if text is None else str(text), quote=False)


def inert_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell escaped (numbers untouched)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_object_dtype(out[column]) or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(lambda v: v if v is None or (isinstance(v, float) and v != v)
                                          else inert(v)).astype(object)
    return out


def _inert_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    out = dict(kwargs)
    if "category_orders" in out:
        out["category_orders"] = {k: [inert(v) for v in vs] for k, vs in out["category_orders"].items()}
    if "labels" in out:
        out["labels"] = {k: inert(v) for k, v in out["labels"].items()}
    for key in ("title", "x", "y", "color", "facet_col", "facet_row", "text", "hover_name"):
        if isinstance(out.get(key), pd.Series):  # a Series of data, not a column name
            out[key] = out[key].map(inert) if not pd.api.types.is_numeric_dtype(out[key]) else out[key]
    if isinstance(out.get("title"), str):
        out["title"] = inert(out["title"])
    return out


def _chart(function: Callable[..., go.Figure], frame: pd.DataFrame, **kwargs: Any) -> go.Figure:
    fig = function(inert_frame(frame), **_inert_kwargs(kwargs))
    # Facet titles read 'column=value': keep the value (escaped above), not our column's name.
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    return fig


TEMPLATE_PANELS = ("T1", "T2", "T3", "no template")


def template_panels(templates: Iterable[object]) -> list[str]:
    """The template panels a chart shows, in SPEC order: only those with data (an empty
    "no template" panel beside T1–T3 says nothing)."""
    present = {str(t) for t in templates}
    return [t for t in TEMPLATE_PANELS if t in present] + sorted(present - set(TEMPLATE_PANELS))


def bar(frame: pd.DataFrame, **kwargs: Any) -> go.Figure:
    """px.bar over the escaped frame (kwargs as px.bar; names of columns, raw category orders)."""
    return _chart(px.bar, frame, **kwargs)


def heatmap(grid: list[list[int]], *, x: Iterable[object], y: Iterable[object], title: object,
            **kwargs: Any) -> go.Figure:
    """px.imshow of a small count grid with escaped axis labels and title."""
    labels = kwargs.pop("labels", None)
    return px.imshow(grid, x=[inert(v) for v in x], y=[inert(v) for v in y], title=inert(title),
                     labels={k: inert(v) for k, v in (labels or {}).items()} or None, **kwargs)


LABEL_MIN_PX = 11  # a bar's value label is drawn at least this large, or not at all (the hover and table keep it)


def titled(fig: go.Figure, *, legend: object | None = None, **layout: Any) -> go.Figure:
    """update_layout with an escaped legend title (other layout keys as given: our own words).

    Bar value labels are readable or absent: Plotly shrinks a label to its bar's width, so on many
    thin bars they turn tiny and overlap; uniformtext hides those below LABEL_MIN_PX instead.
    """
    if legend is not None:
        layout["legend_title_text"] = inert(legend)
    layout.setdefault("uniformtext_minsize", LABEL_MIN_PX)
    layout.setdefault("uniformtext_mode", "hide")
    fig.update_layout(**layout)
    return fig


def hover_names(names: Iterable[object], width: int = HOVER_WIDTH) -> list[str]:
    """Names for a hover label: whole up to `width` characters (raw: the frame escapes them)."""
    return [short(n, width) if n is not None else "" for n in names]

