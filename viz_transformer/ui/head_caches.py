"""Caches of the head experiments (ablation, patching, roles, logit lens): every result keyed by
(model, text, kind, options) and shared by every session."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import effects
from viz_transformer.ui.caches import model
from viz_transformer.ui.jobs import BoundedStore

# What heads do reads at most this many source tokens: its experiments hold layers x heads x n x n
# values (n = 1,000 smollm2 tokens took 8-15 GB); 256 keeps smollm2 under 2 GB
HEADS_MAX_TOKENS = 256


@st.cache_resource(show_spinner=False)
def head_importance_store() -> BoundedStore:
    """Importance maps keyed by (model, text, kind, mode), shared by every session. A plain
    bounded dictionary rather than ``st.cache_data``: the first computation draws a progress
    bar, which a cached function may not."""
    return BoundedStore(32)


@st.cache_resource(show_spinner=False)
def ablated_store() -> BoundedStore:
    """Ablated outputs (``effects.AblatedOutput``: a text and a few numbers per output token)
    keyed by (model, text, heads, mode), shared by every session; a plain bounded dictionary,
    since the first computation draws a progress bar."""
    return BoundedStore(64)


@st.cache_resource(show_spinner=False)
def roles_store() -> BoundedStore:
    """Role scores per head (``analysis.roles.ROLES``, five small grids) keyed by ("roles",
    model, text, kind), shared by every session; bounded, the first computation a stoppable job
    (``ui.jobs``), as the stores below."""
    return BoundedStore(32)


@st.cache_resource(show_spinner=False)
def patching_store() -> BoundedStore:
    """Fractions restored per head, ``[layers, heads]``, keyed by ("patch", model, clean,
    corrupted, kind)."""
    return BoundedStore(32)


@st.cache_resource(show_spinner=False)
def lens_store() -> BoundedStore:
    """Logit lenses (``vt.Lens``: a top token and its probability per layer and position, at most
    ``HEADS_MAX_TOKENS`` source tokens and their output) keyed by ("lens", model, text)."""
    return BoundedStore(32)


@st.cache_resource(show_spinner=False)
def flow_store() -> BoundedStore:
    """Attention flows ``[layers, n, n]`` (``analysis.flow``, at most ``flow.MAX_TOKENS``
    tokens) keyed by ("flow", model, text, kind): a stoppable job the first time."""
    return BoundedStore(16)


@st.cache_data(max_entries=64, show_spinner=False)
def capped_text(name: str, text: str) -> tuple[str, int]:
    """``text`` within ``HEADS_MAX_TOKENS`` source tokens, and its whole token count."""
    return effects.capped_text(model(name), text, HEADS_MAX_TOKENS)


@st.cache_resource(show_spinner=False)
def demo(name: str) -> effects.Demo | None:
    """The searched input where one head changes ``name``'s output (bench/ablation_demo.py)."""
    return effects.demo_for(model(name))


@st.cache_resource(show_spinner=False)
def qk_store() -> BoundedStore:
    """The corpus page's query/key projections keyed by (model, sentences, kind, layer, head,
    projection), shared by every session; computed under a progress bar and a Stop."""
    return BoundedStore(8)
