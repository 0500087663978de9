"""2017 vs today: the paper's Transformer and a modern decoder-only LLM side by side, every line
read from the loaded models (``LoadedModel.architecture``)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import pandas as pd
import streamlit as st

import viz_transformer as vt
from viz_transformer.models.registry import needs_preparation
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.ui import caches, first_load, sidebar, widgets

NOTES = {
    "Normalisation": "Post-LN normalises after each residual add; pre-norm normalises the "
    "sub-layer's input and leaves the residual stream untouched, which keeps deep stacks "
    "trainable without warm-up tricks. RMSNorm drops LayerNorm's mean subtraction and bias.",
    "Positions": "Rotary positions add nothing to the token embedding: each layer rotates every "
    "(q, k) pair of dimensions by an angle proportional to the position, so q·k depends only "
    "on the offset between the two tokens.",
    "Attention heads": "Grouped-query attention keeps all query heads but lets several share "
    "one key/value head: the KV cache, which dominates memory when generating, shrinks by the "
    "group size.",
    "Feed-forward": "SwiGLU multiplies SiLU(x W_gate) by x W_up before W_down: three matrices "
    "instead of two, with a narrower inner width for the same parameter count.",
}


def then_and_now_page() -> None:
    """The paper model, the built-in LLM and the sidebar's model, one column each."""
    name, _ = sidebar.draw()
    widgets.page_header(
        table.title("then_and_now"),
        "The paper's Transformer (2017) next to SmolLM2 (2024), a small model built the way "
        "today's LLMs are. Every cell is read from the loaded model's modules and config; pick "
        "any model in the sidebar (an hf: one too) to add its column.",
    )
    found = {n: s for n in columns(name) if (s := summary(n)) is not None}
    if not found:
        st.info("No model could be read; pick another one in the sidebar.")
        return
    st.table(pd.DataFrame({n: s.rows() for n, s in found.items()}))  # aspects x models
    for aspect, note in NOTES.items():
        st.markdown(f"**{aspect}.** {note}")


def columns(picked: str) -> list[str]:
    """The default model (the paper's architecture on real language), the first installed
    decoder-only LLM, then the sidebar's model."""
    installed = vt.available_models()
    llm = next((n for n in installed if vt.model_info(n).decoder_only), None)
    names = [n for n in (vt.default_model(), llm) if n is not None]
    return names + ([picked] if picked not in names else [])


def summary(name: str) -> ArchitectureSummary | None:
    """``name``'s summary; None after a message (it cannot load, or waits for its one-time
    conversion, offered behind a button)."""
    if needs_preparation(name):
        st.info(
            f"{name} needs a one-time conversion (about 30 s to 90 s) before its column can be "
            "read from the loaded model."
        )
        if st.button(f"Convert {name} now", key="convert_llm"):
            first_load.prepare(name)
            st.rerun()
        return None
    try:
        return caches.architecture(name)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(f"{name}: {exc}")
        return None


then_and_now_page()
