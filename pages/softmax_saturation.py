"""Softmax saturation: why Eq. 1 divides by sqrt(d_k) (section 3.2.1, footnote 4)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

import viz_transformer as vt
from viz_transformer import ui
from viz_transformer.analysis import softmax as sm
from viz_transformer.figures import softmax as figs
from viz_transformer.records.kinds import KIND_TITLES

D_KS = np.unique(np.geomspace(1, 1024, 21).round()).astype(int)
SHOWN = 256  # a long input's maps show this corner (a 4,096-token map would not draw)


@st.cache_data(max_entries=16, show_spinner="Sampling dot products…")
def _dots(d_k: int) -> np.ndarray:
    return sm.dot_products(d_k, 20_000)


@st.cache_data(max_entries=16, show_spinner="Averaging over random queries…")
def _curves(n_keys: int) -> dict[str, np.ndarray]:
    return sm.saturation_curves(n_keys, D_KS)


def real_head(name: str, text: str) -> None:
    """The chosen head with and without the scale, derived from the captured pattern alone."""
    try:
        trace, scale = ui.cached_trace(name, text), sm.head_scale(ui.cached_model(name))
    except (ValueError, RuntimeError, OSError) as exc:
        ui.show_error(exc)
        return
    kinds = [k for k in KIND_TITLES if trace.get(k) is not None]
    if st.session_state.get("kind") not in kinds:
        st.session_state["kind"] = kinds[0]
    kind = st.radio(
        "Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True, key="kind"
    )
    arr = trace.get(kind)
    ui.clamp_state("layer", arr.shape[0])
    ui.clamp_state("head", arr.shape[1])
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(arr.shape[0]), key="layer")
    head = right.selectbox("Head", range(arr.shape[1]), key="head")
    if not scale.scaled:
        st.info(f"{name} does not divide its scores by √d_k: what it computes is the right map.")
    scaled, unscaled = sm.with_and_without_scale(arr[layer, head], scale)
    rows, cols = (t[:SHOWN] for t in trace.tokens_for(kind))
    if max(scaled.shape) > SHOWN:
        st.info(f"{max(scaled.shape):,} tokens: the maps show the first {SHOWN} queries and keys; "
                "the table below reads every row.")  # fmt: skip
    pair = figs.pattern_pair(scaled[:SHOWN, :SHOWN], unscaled[:SHOWN, :SHOWN], rows, cols)
    ui.chart(pair, f"{kind}-scale")
    stats = {m: sm.pattern_stats(p) for m, p in (("scaled", scaled), ("unscaled", unscaled))}
    st.table(
        {
            "": list(figs.MODES.values()),
            "mean entropy (nats)": [f"{s['entropy']:.3f}" for s in stats.values()],
            "mean max weight": [f"{s['max_weight']:.3f}" for s in stats.values()],
            "saturated rows (max > 0.99)": [f"{s['saturated']:.0%}" for s in stats.values()],
        }
    )
    st.caption(
        f"d_k = {scale.d_k}. Softmax ignores a constant per row, so the scores are log p + c "
        f"and removing the scale gives p^√d_k = p^{math.sqrt(scale.d_k):.2f}, renormalised."
    )
    meta = {"model": name, "kind": kind, "layer": layer, "head": head, "d_k": scale.d_k}
    ui.downloads("saturation-head", {"scaled": scaled, "unscaled": unscaled}, meta)


def training(name: str) -> None:
    """Loss and gradient norm of a paper model trained with and without the scale."""
    papers = [m for m in vt.available_models() if ui.cached_spec(m).family == "paper"]
    if not papers:
        st.info("No paper model is installed, so there are no training curves to show.")
        return
    chosen = name if name in papers else st.selectbox("Paper model", papers, key="train_model")
    curves = ui.cached_model(chosen).meta.get("curves", {})  # type: ignore[attr-defined]
    if not {"scaled", "unscaled"} <= set(curves):
        st.info(f"{chosen} was saved without its scaled/unscaled training curves.")
        return
    ui.chart(figs.training_figure(curves, chosen), f"{chosen}-training")
    arrays = {f"{m}_{k}": np.asarray(v) for m, run in curves.items() for k, v in run.items()}
    ui.downloads("saturation-training", arrays, {"model": chosen})


name, text = ui.sidebar()
ui.page_header(
    "Softmax saturation",
    "If q and k have independent N(0, 1) entries, q·k has mean 0 and variance d_k (footnote 4): "
    "large scores push softmax to one-hot, where its gradient vanishes. Dividing by √d_k fixes it.",
    r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right),\qquad "
    r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)=d_k",
)
st.subheader("1. Dot products of random vectors")
d_k = st.select_slider("d_k", [2**i for i in range(11)], value=64)
raw = _dots(d_k)
ui.chart(figs.dot_histogram(raw, d_k), "dot-products")
st.subheader("2. Saturation as d_k grows")
n_keys = st.slider("Number of keys n", 2, 128, 16)
curves = _curves(n_keys)
ui.chart(figs.curves_figure(curves, n_keys), "saturation-curves")
st.caption(f"Uniform weights have entropy log n = {math.log(n_keys):.3f} and max weight 1/n.")
st.subheader("3. Temperature on one score row")
temperature = st.slider("Temperature T", 0.05, 5.0, 1.0, 0.05)
weights = sm.softmax(sm.score_rows(n_keys, d_k)[0] / math.sqrt(d_k) / temperature)
ui.chart(figs.weights_figure(weights, temperature), "temperature")
st.caption(
    f"Scores q·k/√d_k for d_k = {d_k}; T = 1/√d_k = {1 / math.sqrt(d_k):.3f} removes the "
    f"scale. Entropy {float(sm.entropy(weights)):.3f}, max weight {weights.max():.3f}."
)
synthetic = {"dot_products": raw, "weights": weights, **curves}
ui.downloads("saturation-synthetic", synthetic, {"d_k": d_k, "n_keys": n_keys, "T": temperature})
st.subheader("4. A real head with and without the scale")
real_head(name, text)
st.subheader("5. Training with and without the scale")
training(name)
