"""Caches of the head experiments (ablation, patching, roles, logit lens): every result keyed by
(model, text, kind, options) and shared by every session."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis import effects
from viz_transformer.records.kinds import AttentionKind
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


@st.cache_data(max_entries=32, show_spinner="Scoring head roles…")
def head_roles(name: str, text: str, kind: AttentionKind) -> dict[str, np.ndarray]:
    """Role scores per head (``analysis.roles.ROLES``)."""
    return vt.head_roles(model(name), kind, text)


@st.cache_data(max_entries=32, show_spinner="Patching every head…")
def patch_heads(name: str, clean: str, corrupted: str, kind: AttentionKind) -> np.ndarray:
    """Fraction of the logit difference each head restores, ``[layers, heads]``."""
    return vt.patch_heads(model(name), clean, corrupted, kind)


@st.cache_data(max_entries=32, show_spinner="Reading every decoder layer…")
def logit_lens(name: str, text: str) -> vt.Lens:
    """Top next token after every decoder layer at every position."""
    return vt.logit_lens(model(name), text)


@st.cache_data(max_entries=64, show_spinner=False)
def capped_text(name: str, text: str) -> tuple[str, int]:
    """``text`` within ``HEADS_MAX_TOKENS`` source tokens, and its whole token count."""
    return effects.capped_text(model(name), text, HEADS_MAX_TOKENS)


@st.cache_resource(show_spinner=False)
def demo(name: str) -> effects.Demo | None:
    """The searched input where one head changes ``name``'s output (bench/ablation_demo.py)."""
    return effects.demo_for(model(name))
