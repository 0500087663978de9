"""Softmax saturation: why Eq. 1 divides by sqrt(d_k) (section 3.2.1, footnote 4)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import math

import streamlit as st

from pages.sections.softmax_saturation import saturation
from viz_transformer.analysis import softmax as sm
from viz_transformer.figures import softmax as figs
from viz_transformer.ui import caches, sidebar, widgets


def synthetic() -> None:
    """Sections 1-3 on random vectors: dot products, saturation as d_k grows, temperature."""
    st.subheader("1. Dot products of random vectors")
    d_k = st.select_slider("d_k", [2**i for i in range(11)], value=64)
    raw = caches.dot_products(d_k)
    widgets.chart(figs.dot_histogram(raw, d_k), "dot-products")
    st.subheader("2. Saturation as d_k grows")
    n_keys = st.slider("Number of keys n", 2, 128, 16)
    curves = caches.saturation_curves(n_keys)
    widgets.chart(figs.curves_figure(curves, n_keys), "saturation-curves")
    st.caption(f"Uniform weights have entropy log n = {math.log(n_keys):.3f} and max weight 1/n.")
    st.subheader("3. Temperature on one score row")
    temperature = st.slider("Temperature T", 0.05, 5.0, 1.0, 0.05)
    weights = sm.softmax(sm.score_rows(n_keys, d_k)[0] / math.sqrt(d_k) / temperature)
    widgets.chart(figs.weights_figure(weights, temperature), "temperature")
    st.caption(
        f"Scores q·k/√d_k for d_k = {d_k}; T = 1/√d_k = {1 / math.sqrt(d_k):.3f} removes the "
        f"scale. Entropy {float(sm.entropy(weights)):.3f}, max weight {weights.max():.3f}."
    )
    arrays = {"dot_products": raw, "weights": weights, **curves}
    meta = {"d_k": d_k, "n_keys": n_keys, "T": temperature}
    widgets.downloads("saturation-synthetic", arrays, meta)


def softmax_saturation_page() -> None:
    """Random vectors first, then the chosen model's head and training runs."""
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("softmax_saturation"),
        "If q and k have independent N(0, 1) entries, q·k has mean 0 and variance d_k (footnote "
        "4): large scores push softmax to one-hot, where its gradient vanishes. Dividing by √d_k "
        "fixes it.",
        r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right),\qquad "
        r"\operatorname{Var}(q\cdot k)=\sum_{i=1}^{d_k}\operatorname{Var}(q_i k_i)=d_k",
    )
    synthetic()
    st.subheader("4. A real head with and without the scale")
    saturation.real_head(name, text)
    st.subheader("5. Training with and without the scale")
    saturation.training(name)


softmax_saturation_page()
