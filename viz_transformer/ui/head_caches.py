"""Caches of the head experiments (ablation, patching, roles, logit lens): every result keyed by
(model, text, kind, options) and shared by every session."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.ui.caches import model
from viz_transformer.ui.jobs import BoundedStore


@st.cache_resource(show_spinner=False)
def head_importance_store() -> BoundedStore:
    """Importance maps keyed by (model, text, kind, mode), shared by every session. A plain
    bounded dictionary rather than ``st.cache_data``: the first computation draws a progress
    bar, which a cached function may not."""
    return BoundedStore(32)


@st.cache_resource(max_entries=64, show_spinner="Tracing with the heads ablated…")
def ablated_trace(
    name: str, text: str, heads: tuple[tuple[AttentionKind, int, int], ...], mode: str
) -> vt.Trace:
    """A trace with ``heads`` ablated through the whole run, decoding included."""
    return vt.trace(model(name), text, ablate=list(heads), ablation=mode)


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
