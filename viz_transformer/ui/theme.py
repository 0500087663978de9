"""The one stylesheet every page gets (``inject``, called by the sidebar): text of at least
4.5:1 contrast where Streamlit's defaults fade it (captions drawn at 60% opacity, the charts'
tick labels and axis titles in a light grey), text fields' edges and switches' off tracks at
3:1 (Streamlit's grey is 1.5:1), a focus ring of at least 3:1 on everything the keyboard reaches
(Streamlit draws almost none on the sidebar's page links, switches, sliders and scrolling
equations), and the visually hidden text that describes each chart to screen readers
(``chart_access``).

The colours beside the theme in ``.streamlit/config.toml`` (light base, a darker primary red so
a selected chip's text reads at 5.6:1); ``tests/e2e/test_accessibility.py`` measures them.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from viz_transformer.ui.chart_access import ABOUT_PREFIX

MUTED = "#5c5a57"  # 6.9:1 on white, 6.1:1 on the sidebar: captions, tick labels, axis titles
BOUNDARY = "#85827d"  # 3.4:1 to 3.8:1 on a field, the sidebar, the page: edges, off switches
FOCUS = "#1f5fbf"  # 6.1:1 on white, 5.4:1 on the sidebar: the focus ring
_RING = f"outline: 3px solid {FOCUS} !important; outline-offset: 2px !important;"
_FIELDS = (  # text fields and selects: the ring goes around the box, not the bare input
    "[data-testid='stTextAreaRootElement'], [data-testid='stTextInputRootElement'],"
    " [data-testid='stNumberInputContainer'], [data-baseweb='select'], [data-baseweb='input']"
)
STYLE = f"""<style>
[data-testid="stCaptionContainer"] {{ opacity: 1 !important; color: {MUTED} !important; }}
:focus-visible {{ {_RING} }}
[data-testid="stSlider"] [data-rac]:has(> div > input:focus-visible) {{ {_RING} }}
label:has(input:focus-visible), :is({_FIELDS}):has(:is(input, textarea):focus-visible)
{{ {_RING} }}
:is({_FIELDS}) {{ border: 1px solid {BOUNDARY} !important; }}
label:has(input[role="switch"]:not(:checked)) > div:first-of-type {{
  background-color: {BOUNDARY} !important; }}
[data-testid="stSidebarNav"] a:focus-visible {{ outline-offset: -3px !important; }}
.js-plotly-plot .main-svg :is(g[class$="tick"], g[class$="title"]:not(.g-gtitle)) text,
.js-plotly-plot .main-svg text.legendtext {{ fill: {MUTED} !important; }}
[class*="st-key-{ABOUT_PREFIX}"] {{ position: absolute !important; width: 1px !important;
  height: 1px !important; overflow: hidden !important; clip-path: inset(50%) !important;
  white-space: nowrap !important; margin: -1px !important; padding: 0 !important; }}
</style>"""


def inject() -> None:
    """Add the stylesheet to the page (once a run: the sidebar calls it)."""
    st.html(STYLE)


def dark_bar_labels(fig: go.Figure) -> go.Figure:
    """``fig``, or a copy of it whose bar labels drawn beside their bar (not on it) and left in
    Plotly's grey (3.7:1 on white) are in the theme's muted text colour (6.9:1)."""
    grey = [
        i
        for i, t in enumerate(fig.data)
        if t.type == "bar"
        and t.text is not None
        and not t.textfont.color
        and not t.outsidetextfont.color
    ]
    if not grey:
        return fig
    fig = go.Figure(fig)  # a copy: ``fig`` may be a figure other sessions draw too
    for i in grey:
        fig.data[i].outsidetextfont.color = MUTED
    return fig
