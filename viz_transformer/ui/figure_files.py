"""Every chart's "Save figure" menu: SVG, PDF and PNG rendered on the server when someone clicks
(``figure_export``), named like the chart's PNG; on a machine without Chromium the menu says
why and plotly's camera button saves SVG from the browser instead.

Renders take turns in one short line per server (``figure_export.QUEUE``). The menu is drawn when
it opens (it reruns the chart's fragment alone), so it shows the line as it is then: how long a
figure takes and how long yours would wait, or, when the line is full, "N figures are being saved;
try again in about S s" and no buttons. A render that fails (or a line that filled between the
opening and the click) raises in the download request, which the browser reports under the
button; the page itself is untouched."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from viz_transformer.ui.export_queue import about, saving
from viz_transformer.ui.figure_export import (
    DEFAULT_SIZE,
    FORMATS,
    MIME,
    QUEUE,
    export_problem,
    figure_bytes,
)


@st.cache_resource(show_spinner=False)
def _problem() -> str | None:
    """Why this server cannot export, checked once per server (a PATH and package look-up)."""
    return export_problem()


def camera_format() -> str:
    """What plotly's camera button saves: PNG, or SVG where the server cannot export."""
    return "svg" if _problem() else "png"


def save_menu(fig: go.Figure, file_stem: str, key: str, share: float = 1.0) -> None:
    """A small "Save figure" menu under a chart (``key`` unique on the page), drawn when it opens:
    the line's state, then one deferred download per format (the file is rendered only when its
    button is clicked, a few seconds, so a rerun costs nothing), at the proportions the chart has
    in its ``share`` of the page's width (``as_drawn``)."""
    menu = st.popover(
        "Save figure", icon=":material/download:", key=f"save-{key}", on_change="rerun"
    )
    if not menu.open:
        return
    with menu:
        problem = _problem()
        if problem:
            st.caption(problem)
            return
        line = QUEUE.line()
        if line.full:
            st.warning(line.refusal)
            st.button("Try again", key=f"save-{key}-again")  # reruns this chart's part alone
            return
        for fmt in FORMATS:
            _button(fig, fmt, file_stem, f"save-{key}-{fmt}", share)
        st.caption(wait_words(line.busy, line.wait_s, line.each_s))


def wait_words(busy: int, wait_s: float, each_s: float) -> str:
    """What the menu says of the line: how long a figure takes, and the wait before yours."""
    formats = "Vector SVG and PDF keep text as text, for papers; PNG at twice the size."
    each = f"Each figure takes about {about(each_s)} s on the server"
    if not busy:
        return f"{formats} {each}."
    return f"{formats} {each}; {saving(busy)}, so yours starts in about {about(wait_s)} s."


def as_drawn(fig: go.Figure, share: float) -> go.Figure:
    """``fig`` as wide as it is drawn: a chart in a ``share`` of the page (a third on Home) that
    sets no width of its own exports that share of the default width, so a square map stays
    square instead of stretching 3:1."""
    if share >= 1 or fig.layout.width:
        return fig
    return go.Figure(fig).update_layout(width=round(DEFAULT_SIZE[0] * share))


def _button(fig: go.Figure, fmt: str, file_stem: str, key: str, share: float) -> None:
    st.download_button(
        fmt.upper(),
        lambda: figure_bytes(as_drawn(fig, share), fmt, scale=2.0),  # type: ignore[arg-type]
        f"{file_stem}.{fmt}",
        MIME[fmt],
        key=key,
        on_click="ignore",
        width="stretch",
    )
