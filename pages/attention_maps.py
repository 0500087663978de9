"""Attention maps: every layer and head of encoder self, decoder masked self and cross attention,
as maps, bertviz's head view, head mean / max / rollout, and per-head statistics."""

from __future__ import annotations

import streamlit as st

from viz_transformer.ui import attention_tabs, caches, state, widgets


def attention_maps_page() -> None:
    """Pick a kind and layer of the sentence's trace; the open tab draws them."""
    name, text = widgets.sidebar()
    state.keep_or_set({"view_heads": [0], "agg": "mean", "upload_line": None})
    widgets.page_header(
        "Attention maps",
        "Each head turns every query position's scores over the keys into weights that sum to 1 "
        "(section 3.2.1). A row of a map is one token looking at all the tokens it may see.",
        r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
    )
    with st.expander("Sentences from a file"):
        widgets.upload_picker()
    trace = widgets.or_stop(caches.trace, name, text)
    for message in trace.messages:
        st.warning(widgets.literal(message))
    st.markdown(f"**Output:** {widgets.literal(trace.output_text)}")
    widgets.show_missing(trace, "map")
    kind = widgets.kind_picker(trace)
    n_layers, n_heads = trace.get(kind).shape[:2]
    state.clamp_state(layer=n_layers, head=n_heads)
    col_layer, col_hide = st.columns(2)
    layer = col_layer.selectbox("Layer", range(n_layers), key="layer")
    hide = col_hide.toggle("Hide special tokens", key="hide_special", help="</s>, <s>, [CLS]...")
    view = attention_tabs.MapView(name, text, trace, kind, layer, hide)
    tabs = st.tabs(attention_tabs.TABS, key="attn_tab", on_change="rerun")
    for tab, draw in zip(tabs, attention_tabs.DRAW, strict=True):
        if tab.open:
            with tab:
                draw(view)


attention_maps_page()
