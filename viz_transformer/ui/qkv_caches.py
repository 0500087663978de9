"""The Q, K, V walkthrough's captures (``analysis.walkthrough.capture``), shared by every session:
each estimated before it runs and refused, with what it would take, where it would not fit
(``ui.budget``); the memory of the pass handed back after it."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import walkthrough
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.settings import JOB_MEMORY_MB
from viz_transformer.ui import budget, estimates
from viz_transformer.ui.caches import architecture, model, trace


@st.cache_resource(show_spinner=False)
def _captures() -> BoundedCache:
    """Walkthrough captures, at most 8 and ``JOB_MEMORY_MB`` together."""
    return BoundedCache(8, budget.held_bytes, JOB_MEMORY_MB * budget.MB)


def capture(name: str, text: str, kind: AttentionKind) -> walkthrough.KindCapture:
    """Inputs, q, k, v and weights of every layer of ``kind``, for the Q, K, V walkthrough and
    its why section: shared and read-only (smollm2 at 256 tokens holds 255 MB, which
    ``st.cache_data`` pickled in 1 s and unpickled on every rerun in 0.2 s).

    Raises:
        budget.TooLarge: (a ValueError) the capture would not fit; nothing was computed.
    """
    store, key = _captures(), (name, text, kind)
    if key in store:
        return store[key]
    queries, keys = trace(name, text).tokens_for(kind)
    layers = model(name).facts.layers[kind]
    need = estimates.capture_bytes(architecture(name), layers, len(queries), len(keys), layers)
    budget.require(
        f"Capturing q, k, v and every pattern of {len(queries):,} tokens",
        need,
        model(name).device,
        "Shorten the sentence (a few hundred tokens fit), or read this model's maps on the "
        "Attention maps page, which computes one head at a time.",
    )
    with st.spinner("Capturing q, k and v…"):
        found = store.get_or_make(key, lambda: walkthrough.capture(model(name), text, kind))
    budget.give_back()  # the pass's transient patterns and activations
    return found
