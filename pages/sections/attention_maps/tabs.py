"""The four tabs of the Attention maps page (pages/attention_maps.py), private to it: maps,
bertviz's head view, summaries, statistics.

Each tab draws one ``MapView`` (a model's trace, one kind and layer); the page draws only the
open tab, so a long input computes only what is looked at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from pages.sections.attention_maps import sinks
from viz_transformer import settings
from viz_transformer.analysis import aggregate, flow
from viz_transformer.figures import attention
from viz_transformer.figures.heatmap import heatmap
from viz_transformer.records.export import trace_meta
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import fits_in_memory, is_lazy
from viz_transformer.records.trace import Patterns, Trace
from viz_transformer.ui import caches, focus, head_caches, jobs, state, widgets

HEAD_ANCHOR = "head-map"  # where a retrieval head's link scrolls to
WEIGHTINGS = ["weights", "weighted by value norm"]  # the maps' radio (in the URL)

TABS = ("Maps", "Head view", "Mean / max / rollout", "Statistics")  # the URL's values
# what the control shows: attention flow lives in the third view, so its name says so (the
# value in links and lesson files stays as it was)
TAB_LABELS = {"Mean / max / rollout": "Mean / max / rollout / flow"}
SUMMARIES = {
    "mean": aggregate.head_mean,
    "max": aggregate.head_max,
    "rollout": aggregate.rollout,
    "flow": None,
}  # flow: a stoppable job (``flow_view``)
FLOW_JOB = jobs.JobText(
    "Solving one maximum-flow problem per (layer, position, input token)…",
    "Attention flow stopped. It solves layers x n x n flow problems; start it again?",
    "Compute attention flow",
    "flow",
)
EXPLAIN = {
    "mean": "The average of the layer's heads: rows still sum to 1.",
    "max": "The largest weight any head of the layer gives: where some head looks.",
    "rollout": "Rollout (Abnar & Zuidema 2020): per layer average the heads, add the identity "
    "for the residual path, renormalise the rows, and multiply the layers up to this one.",
    "flow": "Attention flow (Abnar & Zuidema 2020): rollout's graph (head mean + identity, "
    "rows renormalised), but each input token's share is the maximum flow it can send to the "
    "position through the layers, each edge carrying at most its weight; rows renormalised. "
    f"Offered up to {flow.MAX_TOKENS} tokens: its cost grows as n to the fourth.",
    "stats": "Entropy in nats (low = focused); special share = weight on </s>, [CLS]... keys; "
    "diagonal distance = mean |query - key| in positions (self-attention only).",
}
NO_ROLLOUT = (
    "Rollout does not apply to cross-attention alone: it chains maps from a sequence to itself, "
    "while cross-attention reads encoder outputs that encoder self-attention already mixed."
)
NO_DIAGONAL = (
    "no diagonal distance for cross-attention: its queries are output positions and its keys "
    "source positions, so |query - key| compares positions of two different sentences."
)
LONG = "{n:,} tokens: {what} needs every head at full size; the maps show one head at a time."


@dataclass(frozen=True)
class MapView:
    """What the page's pickers chose: the model, its input and trace, one kind and layer."""

    name: str
    text: str
    trace: Trace
    kind: AttentionKind
    layer: int
    hide: bool  # hide special tokens (</s>, [CLS]...)

    @property
    def arr(self) -> Patterns:
        """``[layers, heads, q, k]`` weights of the kind (a lazy view for long inputs)."""
        return self.trace.get(self.kind)

    @property
    def n_tokens(self) -> int:
        return max(self.arr.shape[2:])

    def meta(self, **extra: Any) -> dict[str, Any]:
        """What the downloads say about the view they come from."""
        meta = {**trace_meta(self.trace), "kind": self.kind, "layer": self.layer}
        return {**meta, "special_tokens_hidden_in_view": self.hide, **extra}


def zoom_window(n_rows: int, n_cols: int) -> tuple[int, int, int] | None:
    """Controls for a full-resolution window into a long map; None shows the whole map.

    The window lives in the URL (``zoom``, ``zoom_q``, ``zoom_k``, ``zoom_size``): each value
    is set in the session state, clamped to this map, before its widget is drawn without a
    default of its own (a default and a value from the state made Streamlit log a warning)."""
    top = attention.WINDOW_MAX
    upper = {"zoom_size": top, "zoom_q": max(0, n_rows - 1), "zoom_k": max(0, n_cols - 1)}
    starts = {"zoom_size": min(64, top), "zoom_q": 0, "zoom_k": 0, "zoom": False}
    for key, start in starts.items():
        value = st.session_state.get(key, start)
        if key == "zoom":
            fixed = value is True
        else:
            low = 1 if key == "zoom_size" else 0
            fixed = min(max(value, low), upper[key]) if isinstance(value, int) else start
        if key not in st.session_state or fixed != value:
            st.session_state[key] = fixed
    if not st.toggle("Zoom to full resolution", key="zoom"):
        return None
    c1, c2, c3 = st.columns(3)
    size = c3.number_input("Window size", 1, top, step=8, key="zoom_size")
    q0 = c1.number_input("First query", 0, upper["zoom_q"], step=size, key="zoom_q")
    k0 = c2.number_input("First key", 0, upper["zoom_k"], step=size, key="zoom_k")
    return int(q0), int(k0), int(size)


def maps(view: MapView) -> None:
    """Every head of the layer at a glance (on request for long inputs), then one head."""
    kind, arr = view.kind, view.arr
    ask = "Overview of every head (downsampled; computes each head once)"
    if not is_lazy(arr) or st.toggle(ask, key="ov"):
        fig = caches.overview_figure(view.name, view.text, kind, view.hide)
        widgets.chart(fig, f"{kind}-overview")
        sinks.gqa_line(view.name, kind)
    with focus.anchor(HEAD_ANCHOR):
        one_head(view)


def one_head(view: MapView) -> None:
    """One head: its picker, a long map's zoom, the map (weights or value-weighted), downloads
    and its sink note."""
    kind, layer, arr = view.kind, view.layer, view.arr
    head = st.selectbox("Head", range(arr.shape[1]), key="head")
    window = zoom_window(*arr.shape[2:]) if attention.is_large(view.trace, kind) else None
    weighting = "weights"
    if window is None and not attention.is_large(view.trace, kind):
        state.keep_choice("weighting", WEIGHTINGS)  # a bad value from the URL
        weighting = st.radio(
            "Show",
            WEIGHTINGS,
            horizontal=True,
            key="weighting",
            help="Kobayashi et al. 2020: ‖α_ij v_j W^O_h‖, "
            "what key j really adds to query i through this head.",
        )
    if weighting == "weights":
        fig = caches.head_figure(view.name, view.text, kind, layer, head, view.hide, window)
    elif (fig := value_weighted_figure(view, head)) is None:
        return
    widgets.chart(fig, f"attention-{kind}-L{layer}-H{head}")  # the downloads' name, as PNG
    widgets.downloads(
        f"attention-{kind}-L{layer}-H{head}", _data(view, head, fig), view.meta(head=head)
    )
    sinks.section(view.name, view.text, view.trace, kind, layer, head)


def _data(view: MapView, head: int, fig: Any) -> dict[str, Any]:
    """The downloads of the maps tab: every head of a short input; one head of a long one; what
    the figure draws (block maxima or the zoom window) when one head is too large to hold, so a
    32k-token head (4 GB) is never brought to the host whole."""
    kind, layer, arr = view.kind, view.layer, view.arr
    name = f"{kind}_layer{layer}_head{head}"
    if not is_lazy(arr):
        return {kind: arr}
    if arr.shape[2] * arr.shape[3] <= settings.MAX_MATERIALISE:
        return {name: arr[layer, head]}
    return {f"{name}_as_drawn": np.asarray(fig.data[0].z, dtype=np.float32)}


def value_weighted_figure(view: MapView, head: int) -> Any:
    """One head's value-weighted map (special tokens shown), or None after a message."""
    try:
        weighted = caches.value_weighted(view.name, view.text, view.kind)[view.layer, head]
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return None
    rows, cols = view.trace.map_labels(view.kind)
    title = f"Layer {view.layer}, head {head}: weights times value norms ‖α f(x)‖"
    return heatmap(weighted, list(rows), list(cols), title, "query")


def head_view(view: MapView) -> None:
    """bertviz's head view: a line from each query to each key it weighs, one colour per head."""
    if view.n_tokens > attention.HEAD_VIEW_TOKENS:
        st.info(
            f"{view.n_tokens:,} tokens are too many lines to follow; the maps show every weight."
        )
        return
    n_heads, kind = view.arr.shape[1], view.kind
    st.session_state["view_heads"] = [h for h in st.session_state["view_heads"] if h < n_heads]
    heads = st.multiselect("Heads", range(n_heads), key="view_heads")
    if not heads:
        st.info("Choose at least one head.")
        return
    fig = attention.head_view_figure(view.trace, kind, view.layer, heads, view.hide)
    widgets.chart(fig, f"{kind}-head-view")
    arrays = {kind: view.arr[view.layer, heads]}
    widgets.downloads(f"head-view-{kind}", arrays, view.meta(heads=heads))


def _fits(view: MapView, what: str) -> bool:
    """Whether every head fits in memory; if not, say so."""
    if fits_in_memory(view.arr):
        return True
    st.info(LONG.format(n=view.n_tokens, what=what))
    return False


def summary(view: MapView) -> None:
    """The layer's heads summed up: their mean, their max, or the rollout up to the layer."""
    kind = view.kind
    if not _fits(view, "this summary"):
        return
    state.keep_choice("agg", list(SUMMARIES))
    which = st.radio("Summary", list(SUMMARIES), format_func=str.title, key="agg", horizontal=True)
    if which in ("rollout", "flow") and kind == "cross":
        st.info(NO_ROLLOUT.replace("Rollout", which.title()))
        return
    if which == "flow":
        flow_view(view)
        return
    fig = attention.aggregate_figure(view.trace, kind, which, view.layer, view.hide)
    widgets.chart(fig, f"{kind}-{which}")
    st.caption(EXPLAIN[which])
    arrays = {f"{kind}_{which}": SUMMARIES[which](view.arr)}
    widgets.downloads(f"{which}-{kind}", arrays, view.meta())


def flow_view(view: MapView) -> None:
    """Attention flow up to the layer: a stoppable job the first time, refused past the limit."""
    st.caption(EXPLAIN["flow"])
    if view.n_tokens > flow.MAX_TOKENS:
        st.info(
            f"{view.n_tokens:,} tokens: attention flow is offered up to {flow.MAX_TOKENS} tokens "
            "(its cost grows as n to the fourth). Shorten the input, or use rollout."
        )
        return
    flows = jobs.stoppable(
        FLOW_JOB,
        head_caches.flow_store(),
        ("flow", view.name, view.text, view.kind),
        lambda progress, stop: flow.attention_flow(view.trace, view.kind, progress, stop=stop),
    )
    if flows is None:
        return
    fig = attention.flow_figure(view.trace, view.kind, flows, view.layer, view.hide)
    widgets.chart(fig, f"{view.kind}-flow")
    widgets.downloads(f"flow-{view.kind}", {f"{view.kind}_flow": flows}, view.meta())


def statistics(view: MapView) -> None:
    """One row per layer and head: entropy, largest weight, weight on markers, distance."""
    if not _fits(view, "this summary"):
        return
    table = caches.head_stats(view.name, view.text, view.kind)
    number = st.column_config.NumberColumn(format="%.3f")
    config = dict.fromkeys(aggregate.STAT_COLUMNS[2:], number)
    shown = dict(table)
    if view.kind == "cross":  # no diagonal: queries are output positions, keys source positions
        shown["diagonal_distance"] = ["–"] * len(table["layer"])
        config["diagonal_distance"] = st.column_config.TextColumn(help=NO_DIAGONAL)
    st.dataframe(shown, hide_index=True, column_config=config)
    st.caption(EXPLAIN["stats"] + (f" – : {NO_DIAGONAL}" if view.kind == "cross" else ""))
    widgets.downloads(f"head-stats-{view.kind}", table, view.meta())


DRAW = (maps, head_view, summary, statistics)  # one per entry of TABS
