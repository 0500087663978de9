"""The softmax page's model sections: a real head with and without 1/sqrt(d_k), and the training
curves of models trained both ways (section 3.2.1, footnote 4)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis import softmax as sm
from viz_transformer.figures import softmax as figs
from viz_transformer.models.results import HeadScale
from viz_transformer.records.lazy import is_lazy
from viz_transformer.records.trace import Patterns
from viz_transformer.ui import caches, choice, state, widgets

SHOWN = 256  # a long input's maps show this corner (a 4,096-token map would not draw)
ROWS = 512  # query rows read at once for the statistics of a long head


def _rows(patterns: Patterns, layer: int, head: int, rows: range) -> np.ndarray:
    """Some query rows of one head ``[len(rows), k]``: a long input's head is never held whole."""
    if is_lazy(patterns):
        return patterns.cells(layer, head, list(rows))
    return np.asarray(patterns[layer, head, rows.start : rows.stop])


def _head_stats(
    patterns: Patterns, layer: int, head: int, scale: HeadScale
) -> list[dict[str, float]]:
    """``sm.pattern_stats`` of the head with and without the scale, over every row, ``ROWS`` rows
    at a time (every statistic is a mean over rows)."""
    n_q = patterns.shape[2]
    sums = [dict.fromkeys(("entropy", "max_weight", "saturated"), 0.0) for _ in range(2)]
    for start in range(0, n_q, ROWS):
        part = _rows(patterns, layer, head, range(start, min(start + ROWS, n_q)))
        for total, p in zip(sums, sm.with_and_without_scale(part, scale), strict=True):
            for name, value in sm.pattern_stats(p).items():
                total[name] += value * len(p) / n_q
    return sums


def _stats_table(stats: list[dict[str, float]]) -> dict[str, list[str]]:
    """Entropy, largest weight and saturated rows of both patterns, one column each."""
    return {
        "": list(figs.MODES.values()),
        "mean entropy (nats)": [f"{s['entropy']:.3f}" for s in stats],
        "mean max weight": [f"{s['max_weight']:.3f}" for s in stats],
        "saturated rows (max > 0.99)": [f"{s['saturated']:.0%}" for s in stats],
    }


def real_head(name: str, text: str) -> None:
    """The chosen head with and without the scale, derived from the captured pattern alone."""
    try:
        trace, scale = caches.trace(name, text), caches.model(name).head_scale()
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    kind = choice.kind_picker(trace)
    n_layers, n_heads = trace.get(kind).shape[:2]
    state.clamp_state(layer=n_layers, head=n_heads)
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(n_layers), key="layer")
    head = right.selectbox("Head", range(n_heads), key="head")
    if not scale.scaled:
        st.info(f"{name} does not divide its scores by √d_k: what it computes is the right map.")
    patterns = trace.get(kind)
    top = _rows(patterns, layer, head, range(min(SHOWN, patterns.shape[2])))  # whole rows
    scaled, unscaled = (p[:, :SHOWN] for p in sm.with_and_without_scale(top, scale))
    rows, cols = (t[:SHOWN] for t in trace.tokens_for(kind))
    if max(patterns.shape[2:]) > SHOWN:
        st.info(
            f"{max(patterns.shape[2:]):,} tokens: the maps show the first {SHOWN} queries and "
            "keys, and the downloads their numbers; the table below reads every row."
        )
    widgets.chart(figs.pattern_pair(scaled, unscaled, rows, cols), f"{kind}-scale")
    st.table(_stats_table(_head_stats(patterns, layer, head, scale)))
    st.caption(
        f"d_k = {scale.d_k}. Softmax ignores a constant per row, so the scores are log p + c "
        f"and removing the scale gives p^√d_k = p^{math.sqrt(scale.d_k):.2f}, renormalised."
    )
    meta = {"model": name, "kind": kind, "layer": layer, "head": head, "d_k": scale.d_k}
    widgets.downloads("saturation-head", {"scaled": scaled, "unscaled": unscaled}, meta)


def _curves(name: str) -> dict[str, dict[str, list[float]]] | None:
    """The model's scaled/unscaled training curves; None when it has none or cannot load."""
    try:
        return caches.model(name).training_curves()
    except widgets.LOAD_ERRORS:
        return None  # the sidebar's model already says why it cannot load


def _note(name: str) -> str | None:
    try:
        return caches.model(name).training_note()
    except widgets.LOAD_ERRORS:
        return None


def training(name: str) -> None:
    """Loss and gradient norm of a model trained with and without the scale: the chosen model
    when it recorded both runs, else one picked among the installed models that did."""
    curves = _curves(name)
    if curves is None:
        # the spec says which models recorded both runs: nothing else is loaded to find out
        trained = [m for m in vt.available_models() if caches.spec(m).curves]
        if not trained:
            st.info("No installed model was trained both ways, so there are no curves to show.")
            return
        state.keep_choice("train_model", trained)
        chosen = st.selectbox("Paper task model trained both ways", trained, key="train_model")
        st.info(
            f"{name} was trained once, with the scale (a run without it costs another training "
            f"of the model). These are the curves of **{chosen}**, the paper's architecture "
            f"trained here on a task ({caches.spec(chosen).data}) with and without 1/√d_k."
        )
        name, curves = chosen, _curves(chosen) or {}
    fig = figs.training_figure(curves, name)
    fig.update_layout(title=f"{fig.layout.title.text} ({caches.spec(name).data})")
    widgets.chart(fig, "training")
    note = _note(name)
    if note:
        st.caption(note)
    steps = {mode: run["step"][-1] for mode, run in curves.items()}
    if len(set(steps.values())) > 1:
        st.caption(
            f"Both runs start alike; the run with the scale went on to {steps['scaled']:,} "
            f"steps, the one without it stopped at {steps['unscaled']:,}. The axes show the "
            "steps both took: double-click the chart to see all."
        )
    arrays = {f"{m}_{k}": np.asarray(v) for m, run in curves.items() for k, v in run.items()}
    widgets.downloads("saturation-training", arrays, {"model": name})
