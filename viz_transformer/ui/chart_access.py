"""What the chart widget puts with every chart so that it reads without sight of the colours or
a mouse: its accessible name (``alt``), a description of what it shows and its strongest values
(for screen readers, beside the chart), its numbers one keyboard action away ("Show the numbers",
a table of the drawn values) and the "Save figure" menu; no plotly toolbar in the Tab order.

The words and the table come from ``figures.describe`` (pure functions of the figure).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from viz_transformer.figures import describe
from viz_transformer.ui.figure_files import camera_format, save_menu

ABOUT_PREFIX = "vt-about-"  # the description's container (visually hidden by ``ui.theme``)
NUMBERS_LABEL = "Show the numbers"


def config(file_name: str) -> dict[str, Any]:
    """Plotly's config for a chart: no mode bar (its buttons were a dozen Tab stops a chart;
    "Save figure" downloads); where the server cannot export, the camera button alone, which
    then saves SVG in the browser."""
    if camera_format() == "png":
        return {"displayModeBar": False}
    return {
        "displaylogo": False,
        "modeBarButtons": [["toImage"]],
        "toImageButtonOptions": {"format": "svg", "filename": file_name, "scale": 2},
    }


def name_and_words(fig: go.Figure, stem: str) -> tuple[str, str]:
    """The chart's accessible name and its description."""
    return describe.chart_name(fig, stem), describe.describe(fig)


def _unique(base: str, words: str) -> str:
    """Draw the description in a container keyed ``ABOUT_PREFIX + base``, with ``-2``, ``-3``
    added when a chart of that key is already on the page; returns the key's tail used. Plain
    text (``st.text``): Markdown would turn "->" into an arrow, and the container is hidden."""
    suffix = ""
    while True:
        try:
            about = st.container(key=f"{ABOUT_PREFIX}{base}{suffix}")
            break
        except StreamlitDuplicateElementKey:
            suffix = f"-{int(suffix[1:] or 1) + 1}"
    about.text(words)
    return f"{base}{suffix}"


def beneath(
    fig: go.Figure, words: str, shown: str, file_stem: str, key: str, share: float = 1.0
) -> None:
    """Under a chart: its description ``words`` for screen readers, then "Show the numbers" (a
    toggle that reruns only this part and shows the description, ``shown`` as Markdown with
    user text escaped, and the drawn values as a table) and the "Save figure" menu (``share``:
    the part of the page's width the chart has)."""
    key = _unique(key, words)
    st.fragment(_numbers)(fig, shown, file_stem, key, share)


def _numbers(fig: go.Figure, words: str, file_stem: str, key: str, share: float) -> None:
    with st.container(horizontal=True, vertical_alignment="center"):
        shown = st.toggle(NUMBERS_LABEL, key=f"numbers-{key}")
        save_menu(fig, file_stem, key, share)
    if shown:
        st.caption(words)
        st.dataframe(describe.drawn_values(fig))
