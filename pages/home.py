"""Home: what the app shows, Figure 1's parts linked to the pages that show them, the model."""

from __future__ import annotations

import pages.sections.via_app  # noqa: F401  (first: before PyTorch loads)

# isort: split
import plotly.graph_objects as go
import streamlit as st

from viz_transformer.ui import caches, sidebar, widgets

PARTS = [
    ("Inputs, embeddings x sqrt(d_model), positional encoding", "pages/positional_encoding.py",
     "section 3.4-3.5"),
    ("Encoder: multi-head self-attention, N layers", "pages/attention_maps.py", "section 3.2.3"),
    ("Scaled dot-product attention: Q, K, V, scores, softmax", "pages/qkv_walkthrough.py",
     "section 3.2.1, Eq. 1"),
    ("Why divide by sqrt(d_k): softmax saturation", "pages/softmax_saturation.py",
     "section 3.2.1, footnote 4"),
    ("Decoder: masked self-attention, encoder-decoder attention, outputs shifted right",
     "pages/decoder_steps.py", "section 3.1-3.2.3"),
]  # fmt: skip


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
    for kind, column in zip(kinds, st.columns(len(kinds)) if kinds else [], strict=True):
        layer = trace.get(kind).shape[0] - 1
        fig = go.Figure(caches.head_figure(name, text, kind, layer, 0, False, None))  # a copy
        # a third of a 1024 px screen: no colour bar or axis titles (the caption says them)
        fig.update_traces(showscale=False)
        fig.update_xaxes(title=None, automargin=True, tickangle=-90)  # labels one cell apart
        fig.update_yaxes(title=None, automargin=True)
        fig.update_layout(title=f"{KIND_TITLES[kind]}, layer {layer}, head 0", height=330,
                          margin={"t": 40, "b": 10, "l": 10, "r": 10})  # fmt: skip
        with column:
            widgets.chart(fig, f"home-{kind}", share=1 / len(kinds))
    if kinds:
        st.caption(
            f"{name} on your sentence: each row is one token (query) and its weights over the "
            "tokens it may see (keys, along the bottom); darker is more weight, from 0 to 1. "
            "Every layer and head, with a colour bar: **Attention maps**."
        )


def home_page() -> None:
    """The paper, the loaded model and where each part of Figure 1 is shown."""
    name, text = sidebar.draw()
    widgets.page_header(
        "viz-transformer",
        "See what happens inside the Transformer of *Attention Is All You Need* (Vaswani et al., "
        "2017): every layer and head, for models built exactly as section 3 describes and for "
        "real pretrained models. Pick a model and a sentence in the sidebar; every page uses them.",
    )
    first_charts(name, text)
    spec = caches.spec(name)
    try:
        model = caches.model(name)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(f"{name} cannot be loaded: {exc}")
    else:
        st.success(f"Model **{name}** is loaded on **{model.device}**. {spec.description}")
    st.subheader("Figure 1, part by part")
    for label, target, where in PARTS:
        st.page_link(target, label=f"{label} ({where})")


home_page()
