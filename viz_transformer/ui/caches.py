"""Every Streamlit cache of the app: models once per server, records and figures per input.

Keys are plain strings and numbers (model name, text, options), so a cached value is shared by
every session that asks the same question. ``st.cache_resource`` holds what is never changed and
is costly to copy (models, traces, figures); ``st.cache_data`` holds small records, bounded.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis import aggregate, sinks
from viz_transformer.analysis import positional as pa
from viz_transformer.analysis import softmax as sm
from viz_transformer.figures import attention
from viz_transformer.figures import live as live_figs
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import is_lazy
from viz_transformer.settings import TRACE_CACHE_ENTRIES, TRACE_CACHE_MB
from viz_transformer.training.live import runs as live_runs
from viz_transformer.ui import budget
from viz_transformer.ui.background import quiet_own_threads

quiet_own_threads()  # the warm-up threads fill these caches outside any session, on purpose

D_KS = np.unique(np.geomspace(1, 1024, 21).round()).astype(int)  # d_k of the saturation curves


@st.cache_resource(show_spinner=False)
def spec(name: str) -> vt.ModelSpec:
    """What the registry knows of ``name``, without loading it."""
    return vt.model_info(name)


@st.cache_resource(show_spinner="Loading the model…")
def model(name: str) -> vt.LoadedModel:
    """The loaded model, one per server, shared by every session."""
    return vt.load_model(name)


@st.cache_resource(show_spinner=False)
def _traces() -> BoundedCache:
    """The server's traces, at most ``TRACE_CACHE_ENTRIES`` and ``TRACE_CACHE_MB`` together (a
    long trace's queries and keys, on the model's device, weighed as they are fetched)."""
    return BoundedCache(TRACE_CACHE_ENTRIES, budget.held_bytes, TRACE_CACHE_MB * budget.MB)


def trace(name: str, text: str, target: str | None = None) -> vt.Trace:
    """One shared, read-only record per input: no copy per rerun, and a long input's lazy heads
    are computed once for every session that looks at them."""
    store, key = _traces(), (name, text, target)
    if key not in store:
        with st.spinner("Tracing attention…"):
            record = store.get_or_make(key, lambda: vt.trace(model(name), text, target))
        if any(is_lazy(record.get(kind)) for kind in record.kinds):
            budget.give_back()  # a long input's pass: its activations are garbage now
        return record
    record = store[key]
    store.put(key, record)  # weighed again: a lazy trace holds the layers fetched since
    return record


@st.cache_data(max_entries=32, show_spinner=False)
def head_stats(name: str, text: str, kind: AttentionKind) -> dict[str, np.ndarray]:
    """Per-head statistics of one attention kind (``aggregate.STAT_COLUMNS``)."""
    record = trace(name, text)
    return aggregate.head_stats(record.get(kind), record.tokens_for(kind)[1], kind != "cross")


# Figures are shared by every session and never changed (widgets.chart draws presenter mode on a
# copy): st.cache_resource, because unpickling a figure from st.cache_data costs more than
# building it again.
@st.cache_resource(max_entries=16, show_spinner="Drawing every head…")
def overview_figure(name: str, text: str, kind: AttentionKind, hide: bool) -> go.Figure:
    """Every head of every layer of ``kind``, one tile each."""
    return attention.overview_figure(trace(name, text), kind, hide, model(name).kv_groups(kind))


@st.cache_data(max_entries=32, show_spinner="Measuring the first token's share…")
def sink_mass(name: str, text: str, kind: AttentionKind) -> np.ndarray:
    """``[layers, heads]`` mean weight on the first token (``analysis.sinks``)."""
    return sinks.sink_mass(trace(name, text).get(kind), kind)


@st.cache_resource(max_entries=256, show_spinner=False)
def head_figure(
    name: str,
    text: str,
    kind: AttentionKind,
    layer: int,
    head: int,
    hide: bool,
    window: tuple[int, int, int] | None,
) -> go.Figure:
    """One head's map; ``window`` is (first query, first key, size) of a full-resolution zoom."""
    return attention.head_figure(trace(name, text), kind, layer, head, hide, window)


@st.cache_data(max_entries=16, show_spinner="Reading the architecture…")
def architecture(name: str) -> ArchitectureSummary:
    """What ``name`` is built of (``LoadedModel.architecture``)."""
    return model(name).architecture()


@st.cache_data(max_entries=16, show_spinner=False)
def rotary_tables(name: str, positions: int) -> tuple[np.ndarray, np.ndarray] | None:
    """cos, sin ``[positions, d_head]`` of ``name``'s rotary module, None without one."""
    return model(name).rotary_tables(positions)


@st.cache_data(max_entries=8, show_spinner="Reading the embeddings…")
def input_vectors(name: str) -> pa.InputVectors:
    """Token-embedding norms and the position table the model adds (section 3.4)."""
    return pa.input_vectors(model(name))


@st.cache_data(max_entries=16, show_spinner="Sampling dot products…")
def dot_products(d_k: int) -> np.ndarray:
    """20,000 samples of q . k for random N(0, 1) vectors of width ``d_k`` (footnote 4)."""
    return sm.dot_products(d_k, 20_000)


@st.cache_data(max_entries=16, show_spinner="Averaging over random queries…")
def saturation_curves(n_keys: int) -> dict[str, np.ndarray]:
    """Entropy, max weight and Jacobian norm over ``D_KS``, with and without the scale."""
    return sm.saturation_curves(n_keys, D_KS)


@st.cache_resource(show_spinner=False)
def live_trainer() -> live_runs.LiveTrainer:
    """The server's one live-training job, shared by every session (``training.live.runs``)."""
    return live_runs.shared_trainer()


@st.cache_resource(max_entries=4, show_spinner=False)
def live_figures(run_id: int, version: int, _snap: live_runs.LiveSnapshot) -> dict[str, go.Figure]:
    """The figures of one report of a live run, built once for every session that watches it:
    ``"curves"``, then ``"<run label>/cross"`` and ``"<run label>/decoder"`` per run."""
    figs = {"curves": live_figs.curves_figure(_snap.curves)}
    for label, record in _snap.traces.items():
        for kind in ("cross", "decoder"):
            figs[f"{label}/{kind}"] = live_figs.heads_figure(record, kind, label)
    return figs


@st.cache_data(max_entries=32, show_spinner="Weighting by value norms…")
def value_weighted(name: str, text: str, kind: AttentionKind) -> np.ndarray:
    """Kobayashi et al.'s ||alpha f(x)|| maps, ``[layers, heads, q, k]`` (Attention maps and
    What heads do)."""
    return vt.value_weighted(model(name), text, kind)
