"""The Q, K, V walkthrough's captures (``analysis.walkthrough.capture``) of one layer each, shared
by every session: each estimated before it runs and refused, with what it would take, where it
would not fit (``ui.budget``); the memory of the pass handed back after it. The component split
of a score, which reads the earlier layers at two positions, beside them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import viz_transformer as vt
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


def capture(name: str, text: str, kind: AttentionKind, layer: int) -> walkthrough.KindCapture:
    """Layer ``layer``'s input, q, k, v and heads' outputs of ``kind`` (``walkthrough.reads``),
    for the Q, K, V walkthrough, its why section and what a head writes: shared and read-only,
    one layer whatever the model's depth, and no pattern (every layer's patterns took 2.5 GB
    for smollm2 at 1,511 tokens).

    Raises:
        budget.TooLarge: (a ValueError) the capture would not fit; nothing was computed.
    """
    store, key = _captures(), (name, text, kind, layer)
    if key in store:
        return store[key]
    queries, keys = trace(name, text).tokens_for(kind)
    budget.require(
        f"Capturing layer {layer}'s q, k and v of {len(queries):,} tokens",
        need(name, len(queries), len(keys)),
        model(name).device,
        "Shorten the sentence, or read this model's maps on the Attention maps page, which "
        "computes one head at a time.",
    )
    reads = walkthrough.reads(layer)
    with st.spinner("Capturing q, k and v…"):
        found = store.get_or_make(
            key, lambda: walkthrough.capture(model(name), text, kind, needs=reads)
        )
    budget.give_back()  # the pass's transient activations
    return found


def need(name: str, n_q: int, n_k: int) -> int:
    """The bytes one layer's capture of ``n_q`` queries and ``n_k`` keys takes (``estimates``):
    what ``capture`` checks, and what a link to the walkthrough asks before it is offered."""
    return estimates.capture_bytes(architecture(name), 1, n_q, n_k, 0)


@st.cache_data(max_entries=32, show_spinner="Splitting the score…")
def score_parts(
    name: str, text: str, kind: AttentionKind, layer: int, head: int, pair: tuple[int, int]
) -> pd.DataFrame:
    """The component split of one score (``vt.score_parts``): its own pass, which reads the
    earlier layers at the query's and the key's positions alone."""
    return vt.score_parts(model(name), text, kind, layer, head, *pair, by="component")
