"""Every chart's "Save figure" menu: SVG, PDF and PNG rendered on the server when someone clicks
(``figures.export``), named like the chart's PNG; on a machine without Chromium the menu says
why and plotly's camera button saves SVG from the browser instead. A render that fails raises in
the download request, which the browser reports; the page itself is untouched."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from viz_transformer.figures.export import FORMATS, MIME, export_problem, figure_bytes


@st.cache_resource(show_spinner=False)
def _problem() -> str | None:
    """Why this server cannot export, checked once per server (a PATH and package look-up)."""
    return export_problem()


def camera_format() -> str:
    """What plotly's camera button saves: PNG, or SVG where the server cannot export."""
    return "svg" if _problem() else "png"


def save_menu(fig: go.Figure, file_stem: str, key: str) -> None:
    """A small "Save figure" menu under a chart: one deferred download per format (the file is
    rendered only when its button is clicked, a few seconds, so a rerun costs nothing)."""
    with st.popover("Save figure", icon=":material/download:"):
        problem = _problem()
        if problem:
            st.caption(problem)
            return
        suffix = ""
        for fmt in FORMATS:
            while True:  # a name drawn twice in one run (a chart per ablation) gets "-2", "-3"
                try:
                    _button(fig, fmt, file_stem, f"save-{key}{suffix}-{fmt}")
                    break
                except StreamlitDuplicateElementKey:
                    suffix = f"-{int(suffix[1:] or 1) + 1}"
        st.caption("Vector SVG and PDF keep text as text, for papers; PNG at twice the size.")


def _button(fig: go.Figure, fmt: str, file_stem: str, key: str) -> None:
    st.download_button(
        fmt.upper(),
        lambda: figure_bytes(fig, fmt, scale=2.0),  # type: ignore[arg-type]
        f"{file_stem}.{fmt}",
        MIME[fmt],
        key=key,
        on_click="ignore",
        width="stretch",
    )
