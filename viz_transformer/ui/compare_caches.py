"""Caches of the "Compare two models" page: a comparison and a run's drift, keyed by model
names, sentences and kind, shared by every session and never changed."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis.comparison.drift import Drift, checkpoint_drift
from viz_transformer.models.tokenizers import tokenizer_key
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.ui.caches import model, spec


@st.cache_resource(max_entries=16, show_spinner="Comparing every head…")
def compare(a: str, b: str, sentences: tuple[str, ...], kind: AttentionKind) -> vt.Comparison:
    """``vt.compare`` of two models by name (each loaded once per server)."""
    return vt.compare(model(a), model(b), sentences, kind)


@st.cache_resource(max_entries=8, show_spinner="Following every head over the checkpoints…")
def drift(names: tuple[str, ...], sentences: tuple[str, ...], kind: AttentionKind) -> Drift:
    """``checkpoint_drift`` of a run's checkpoints by name (``vt.drift`` with the traces behind
    it, so a head can be shown at each checkpoint)."""
    return checkpoint_drift([model(n) for n in names], sentences, kind)


@st.cache_data(max_entries=64, show_spinner=False)
def tokenizer(name: str) -> str | None:
    """``tokenizer_key`` of a model by name, without loading it; None when it cannot be told
    (the page then says why the model does not load, once it tries)."""
    try:
        return tokenizer_key(spec(name))
    except (ValueError, RuntimeError, OSError):
        return None
