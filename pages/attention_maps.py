"""Attention maps: every layer and head of encoder self, decoder masked self and cross attention,
as maps, bertviz's head view, head mean / max / rollout, and per-head statistics."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.attention_maps import tabs
from viz_transformer.ui import caches, choice, focus, input_notes, sidebar, state, switch, widgets
from viz_transformer.ui.retrieval_view import run_text


def inputs(name: str, text: str, run: bool) -> None:
    """Sentences from a file, and what the page says about the input (paragraph, language);
    ``run``: a retrieval run's prompt is shown instead of the sidebar's sentence."""
    with st.expander("Sentences from a file"):
        choice.upload_picker()
    input_notes.input_notes(name, text, run)


def attention_maps_page() -> None:
    """Pick a kind and layer of the sentence's trace; the open tab draws them."""
    name, text = sidebar.draw()
    state.keep_or_set({"view_heads": [0], "agg": "mean", "upload_line": None})
    widgets.page_header(
        table.title("attention_maps"),
        "Each head turns every query position's scores over the keys into weights that sum to 1 "
        "(section 3.2.1). A row of a map is one token looking at all the tokens it may see.",
        r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
    )
    shown = run_text(name, text, tabs.HEAD_ANCHOR)  # a retrieval head's link
    run, text = shown is not text, shown
    above = st.container()  # input notes; in presenter mode below the view, so a map shows first
    if not widgets.presenting():
        with above:
            inputs(name, text, run)
    try:
        trace = caches.trace(name, text)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        if widgets.presenting():
            inputs(name, text, run)
        st.stop()
    input_notes.output_line(trace, text)
    kind = choice.kind_picker(trace)
    n_layers, n_heads = trace.get(kind).shape[:2]
    state.clamp_state(layer=n_layers, head=n_heads)
    col_layer, col_hide = st.columns(2)
    layer = col_layer.selectbox("Layer", range(n_layers), key="layer")
    hide = col_hide.toggle("Hide special tokens", key="hide_special", help="</s>, <s>, [CLS]...")
    view = tabs.MapView(name, text, trace, kind, layer, hide)
    # a keyed control, not st.tabs (which code cannot open), so a link reopens the same view
    state.keep_choice("attn_tab", tabs.TABS)
    tab = st.segmented_control(
        "View",
        tabs.TABS,
        key="attn_tab",
        required=True,
        format_func=lambda t: tabs.TAB_LABELS.get(t, t),
    )
    tabs.DRAW[tabs.TABS.index(tab or tabs.TABS[0])](view)
    with st.container() if widgets.presenting() else above:
        if widgets.presenting():
            inputs(name, text, run)
        for message in trace.messages:
            st.warning(widgets.literal(message))
        switch.show_missing(trace, "map")
    focus.apply()  # a link's zoomed head, scrolled into view


attention_maps_page()
