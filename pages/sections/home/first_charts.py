"""The home page's first screen: one head of each attention the model has, side by side, so
Figure 1's three attentions are on the user's sentence before any click."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from viz_transformer.ui import caches, widgets

MAPS_KEY = "home-maps"
# side by side where a map has about 300 px; one below the other in a narrower main column (1024 px
# with the sidebar open), where a third of it left cells twice as tall as wide (issue 49)
NARROW = f"""<style>.st-key-{MAPS_KEY} {{ container-type: inline-size; }}
@container (max-width: 880px) {{
  .st-key-{MAPS_KEY} [data-testid="stHorizontalBlock"] {{ flex-wrap: wrap; }}
  .st-key-{MAPS_KEY} [data-testid="stColumn"] {{ min-width: 100%; }} }}</style>"""
KIND_TITLES = {"encoder": "encoder self-attention", "decoder": "decoder masked self-attention",
               "cross": "encoder-decoder (cross) attention"}  # fmt: skip


def first_charts(name: str, text: str) -> None:
    """One head of each attention the model has, small and side by side, so the first screen
    shows Figure 1's three attentions on the sentence: the last layer's first head of each."""
    try:
        trace = caches.trace(name, text)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    kinds = [k for k in KIND_TITLES if trace.get(k) is not None]
    # side by side; one below the other in presenter mode, where a third of a 1024 px
    # projector left each map about 100 px wide with its tokens edge to edge
    stacked = widgets.presenting()
    st.html(NARROW)
    maps = st.container(key=MAPS_KEY)
    places = [maps.container() for _ in kinds] if stacked else maps.columns(len(kinds) or 1)
    for kind, column in zip(kinds, places, strict=False):
        layer = trace.get(kind).shape[0] - 1
        fig = go.Figure(caches.head_figure(name, text, kind, layer, 0, False, None))  # a copy
        # a third of a 1024 px screen: no colour bar or axis titles (the caption says them)
        fig.update_traces(showscale=False)
        # labels one cell apart; square cells whatever the width (the map shrinks to fit)
        fig.update_xaxes(title=None, automargin=True, tickangle=-90, constrain="domain")
        fig.update_yaxes(title=None, automargin=True, scaleanchor="x", constrain="domain")
        fig.update_layout(
            title=f"{KIND_TITLES[kind]}, layer {layer}, head 0",
            height=330,
            margin={"t": 40, "b": 10, "l": 10, "r": 10},
        )
        with column:
            widgets.chart(fig, f"home-{kind}", share=1.0 if stacked else 1 / len(kinds))
    if kinds:
        st.caption(
            f"{name} on your sentence: each row is one token (query) and its weights over the "
            "tokens it may see (keys, along the bottom); darker is more weight, from 0 to 1. "
            "Every layer and head, with a colour bar: **Attention maps**."
        )
