"""Home: what the app shows, Figure 1's parts linked to the pages that show them, the model."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)

# isort: split
import streamlit as st

from pages.sections.home.first_charts import first_charts
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
        st.success(
            f"Model **{name}** is loaded on **{model.device}** in "
            f"**{str(model.dtype).removeprefix('torch.')}**. {spec.description}"
        )
    st.subheader("Figure 1, part by part")
    for label, target, where in PARTS:
        st.page_link(target, label=f"{label} ({where})")


home_page()
