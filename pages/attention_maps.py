"""Attention maps: every layer and head of encoder self, decoder masked self and cross attention,
as maps, bertviz's head view, head mean / max / rollout, and per-head statistics."""

import plotly.graph_objects as go
import streamlit as st

from viz_transformer import ui
from viz_transformer.analysis import aggregate
from viz_transformer.figures import attention as figures
from viz_transformer.records.export import trace_meta
from viz_transformer.records.lazy import fits_in_memory, is_lazy

TABS = ["Maps", "Head view", "Mean / max / rollout", "Statistics"]
SUMMARIES = {"mean": aggregate.head_mean, "max": aggregate.head_max, "rollout": aggregate.rollout}
EXPLAIN = {
    "mean": "The average of the layer's heads: rows still sum to 1.",
    "max": "The largest weight any head of the layer gives: where some head looks.",
    "rollout": "Rollout (Abnar & Zuidema 2020): per layer average the heads, add the identity "
    "for the residual path, renormalise the rows, and multiply the layers up to this one.",
    "stats": "Entropy in nats (low = focused); special share = weight on </s>, [CLS]... keys; "
    "diagonal distance = mean |query - key| in positions (self-attention only).",
}
NO_ROLLOUT = (
    "Rollout does not apply to cross-attention alone: it chains maps from a sequence to itself, "
    "while cross-attention reads encoder outputs that encoder self-attention already mixed."
)


LONG = "{n:,} tokens: {what} needs every head at full size; the maps show one head at a time."


@st.cache_data(max_entries=32, show_spinner=False)
def head_stats(name: str, text: str, kind: str) -> dict:
    trace = ui.cached_trace(name, text)
    return aggregate.head_stats(trace.get(kind), trace.tokens_for(kind)[1], kind != "cross")


# Figures shared by every session and never changed (ui.chart draws presenter mode on a copy);
# st.cache_resource, because unpickling a figure from st.cache_data costs more than building it
@st.cache_resource(max_entries=16, show_spinner="Drawing every head…")
def overview(name: str, text: str, kind: str, hide: bool) -> go.Figure:
    return figures.overview_figure(ui.cached_trace(name, text), kind, hide)


@st.cache_resource(max_entries=256, show_spinner=False)
def one_head(name: str, text: str, kind: str, layer: int, head: int, hide: bool,
             window: tuple[int, int, int] | None) -> go.Figure:  # fmt: skip
    return figures.head_figure(ui.cached_trace(name, text), kind, layer, head, hide, window)


def zoom_window(n_rows: int, n_cols: int) -> tuple[int, int, int] | None:
    """Controls for a full-resolution window into a long map; None shows the whole map."""
    if not st.toggle("Zoom to full resolution", key="zoom"):
        return None
    c1, c2, c3 = st.columns(3)
    top = figures.HEAD_MAX
    size = c3.number_input("Window size", 1, top, min(64, top), step=8, key="zoom_size")
    q0 = c1.number_input("First query", 0, max(0, n_rows - 1), 0, step=size, key="zoom_q")
    k0 = c2.number_input("First key", 0, max(0, n_cols - 1), 0, step=size, key="zoom_k")
    return int(q0), int(k0), int(size)


name, text = ui.sidebar()
for key, default in (("view_heads", [0]), ("agg", "mean"), ("upload_line", None)):
    # keep the choices made in tabs now hidden (Streamlit drops the state of undrawn widgets)
    st.session_state[key] = st.session_state.get(key, default)
ui.page_header(
    "Attention maps",
    "Each head turns every query position's scores over the keys into weights that sum to 1 "
    "(section 3.2.1). A row of a map is one token looking at all the tokens it may see.",
    r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
)
with st.expander("Sentences from a file"):
    ui.upload_picker()
trace = ui.trace_or_stop(name, text)

for message in trace.messages:
    st.warning(ui.literal(message))
st.markdown(f"**Output:** {ui.literal(trace.output_text)}")
kinds = [k for k in figures.KIND_TITLES if trace.get(k) is not None]
for missing, why in trace.notes.items():
    st.info(f"No {figures.KIND_TITLES[missing].lower()} map: {why}")
if st.session_state.get("kind") not in kinds:
    st.session_state["kind"] = kinds[0]
kind = st.radio(
    "Attention kind", kinds, format_func=figures.KIND_TITLES.get, horizontal=True, key="kind"
)
arr = trace.get(kind)
n_layers, n_heads = arr.shape[:2]
ui.clamp_state("layer", n_layers)
ui.clamp_state("head", n_heads)
col_layer, col_hide = st.columns(2)
layer = col_layer.selectbox("Layer", range(n_layers), key="layer")
hide = col_hide.toggle("Hide special tokens", key="hide_special", help="</s>, <s>, [CLS]...")
meta = {**trace_meta(trace), "kind": kind, "layer": layer, "special_tokens_hidden_in_view": hide}
maps, view, agg, stats = st.tabs(TABS, key="attn_tab", on_change="rerun")

n_tokens = max(arr.shape[2:])
if maps.open:
    with maps:
        ask = "Overview of every head (downsampled; computes each head once)"
        if not is_lazy(arr) or st.toggle(ask, key="ov"):
            ui.chart(overview(name, text, kind, hide), f"{kind}-overview")
        head = st.selectbox("Head", range(n_heads), key="head")
        window = zoom_window(*arr.shape[2:]) if figures.is_large(trace, kind) else None
        fig = one_head(name, text, kind, layer, head, hide, window)
        ui.chart(fig, f"{kind}-L{layer}-H{head}")
        shown = (
            {f"{kind}_layer{layer}_head{head}": arr[layer, head]} if is_lazy(arr) else {kind: arr}
        )
        ui.downloads(f"attention-{kind}", shown, meta)
if view.open and n_tokens > figures.HEAD_VIEW_TOKENS:
    with view:
        st.info(f"{n_tokens:,} tokens are too many lines to follow; the maps show every weight.")
elif view.open:
    with view:
        st.session_state["view_heads"] = [h for h in st.session_state["view_heads"] if h < n_heads]
        heads = st.multiselect("Heads", range(n_heads), key="view_heads")
        if not heads:
            st.info("Choose at least one head.")
            st.stop()
        ui.chart(figures.head_view_figure(trace, kind, layer, heads, hide), f"{kind}-head-view")
        ui.downloads(f"head-view-{kind}", {kind: arr[layer, heads]}, {**meta, "heads": heads})
for tab in (agg, stats):
    if tab.open and not fits_in_memory(arr):
        with tab:
            st.info(LONG.format(n=n_tokens, what="this summary"))
            st.stop()
if agg.open:
    with agg:
        which = st.radio("Summary", list(SUMMARIES), format_func=str.title, key="agg")
        if which == "rollout" and kind == "cross":
            st.info(NO_ROLLOUT)
            st.stop()
        ui.chart(figures.aggregate_figure(trace, kind, which, layer, hide), f"{kind}-{which}")
        st.caption(EXPLAIN[which])
        ui.downloads(f"{which}-{kind}", {f"{kind}_{which}": SUMMARIES[which](arr)}, meta)
if stats.open:
    with stats:
        table = head_stats(name, text, kind)
        number = st.column_config.NumberColumn(format="%.3f")
        st.dataframe(
            table, hide_index=True, column_config=dict.fromkeys(aggregate.STAT_COLUMNS[2:], number)
        )
        st.caption(EXPLAIN["stats"])
        ui.downloads(f"head-stats-{kind}", table, meta)
