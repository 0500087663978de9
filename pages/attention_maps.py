"""Attention maps: every layer and head of encoder self, decoder masked self and cross attention."""

import streamlit as st

from viz_transformer import ui
from viz_transformer.export import trace_arrays, trace_meta
from viz_transformer.figures import attention as figures

name, text = ui.sidebar()
ui.page_header(
    "Attention maps",
    "Each head turns every query position's scores over the keys into weights that sum to 1 "
    "(section 3.2.1). A row of a map is one token looking at all the tokens it may see.",
    r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
)
trace = ui.trace_or_stop(name, text)

st.markdown(f"**Output:** `{trace.output_text}`")
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

ui.chart(figures.overview_figure(trace, kind), f"{kind}-overview")
ui.clamp_state("layer", n_layers)
ui.clamp_state("head", n_heads)
col_layer, col_head = st.columns(2)
layer = col_layer.selectbox("Layer", range(n_layers), key="layer")
head = col_head.selectbox("Head", range(n_heads), key="head")
ui.chart(figures.head_figure(trace, kind, layer, head), f"{kind}-L{layer}-H{head}")
ui.downloads(f"attention-{kind}", trace_arrays(trace), trace_meta(trace))
