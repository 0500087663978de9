"""Positional encoding: the paper's sinusoid and what the chosen model adds (section 3.5)."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from viz_transformer import ui
from viz_transformer.analysis import positional as pa
from viz_transformer.figures import positional as figs
from viz_transformer.networks.positional import sinusoidal_table

LAYOUTS = {
    "interleaved": "Interleaved (paper): sin and cos of one frequency sit side by side, 2i, 2i+1.",
    "split": "Split (Marian, fairseq, Bergamot): all sines first, then all cosines.",
}
NO_TABLE = {
    "rotary": "rotates each query and key by its position inside attention (RoPE)",
    "relative": "adds a learned bias per query-key offset to the attention scores",
}
MAX_SIMILARITY = 400  # rows of the position-position matrices drawn: more is too heavy to send


@st.cache_data(max_entries=8, show_spinner="Reading the embeddings…")
def _inputs(name: str) -> pa.InputVectors:
    return pa.input_vectors(ui.cached_model(name))


def model_numbers(name: str, text: str, length: int) -> dict[str, np.ndarray]:
    """Section 4: the chosen model's token-embedding norms, and its table when it adds one."""
    positions = ui.cached_spec(name).positions
    parts = _inputs(name)
    if parts.positions is None:
        st.info(
            f"{name} {NO_TABLE.get(positions, 'exposes no position table')}: nothing is "
            "added to the input embeddings, so there is no table to show."
        )
        return {}
    pos_norms = np.linalg.norm(parts.positions, axis=1)
    lo, mid, hi = np.percentile(parts.token_norms, [5, 50, 95])
    st.markdown(
        f"Token embeddings × {parts.scale:.3g}: median norm **{mid:.2f}** (5–95 %: "
        f"{lo:.2f}–{hi:.2f}); position vectors ({parts.source}): median norm "
        f"**{np.median(pos_norms):.2f}** (a sinusoid's is √(d_model/2))."
    )
    if (
        st.radio("Norms over", ["the vocabulary", "the sentence"], horizontal=True)
        == "the sentence"
    ):
        try:
            per = pa.sentence_norms(ui.cached_model(name), text)
        except ValueError as exc:
            ui.show_error(exc)
        else:
            fig = figs.sentence_norms_figure(per["tokens"], per["token_norm"], per["position_norm"])
            ui.chart(fig, "sentence-norms")
    else:
        ui.chart(figs.vocab_norms_figure(parts.token_norms, pos_norms), "vocab-norms")
    if ui.cached_spec(name).family == "bergamot":
        st.caption(
            "Bergamot (Marian) uses frequencies exp(−i·log 10000 / (d/2 − 1)), not the "
            "paper's 10000^(−2i/d): the slowest is exactly 1/10000."
        )
    learned = parts.positions[: min(length, len(parts.positions))]
    if positions == "learned":
        sine = sinusoidal_table(len(learned), learned.shape[1])
        titles = (f"{name}: learned table", "paper sinusoid, same size")
        ui.chart(figs.pair_figure(learned, sine, titles), "learned-vs-sinusoid")
        cos = pa.similarity(learned[:MAX_SIMILARITY], cosine=True)
        ui.chart(figs.similarity_figure(cos, "Learned positions: cosine similarity"), "cosine")
    return {"model_positions": learned, "token_norms": parts.token_norms}


name, text = ui.sidebar()
ui.page_header(
    "Positional encoding",
    "Attention ignores order, so each position gets a vector added to its token's embedding "
    "(section 3.5): sines and cosines whose wavelengths grow geometrically from 2π to 10000·2π.",
    r"PE_{(pos,2i)}=\sin\!\left(pos/10000^{2i/d_{model}}\right),\quad "
    r"PE_{(pos,2i+1)}=\cos\!\left(pos/10000^{2i/d_{model}}\right)",
)
left, mid, right = st.columns(3)
d_model = left.slider("d_model", 16, 1024, 128, step=16)
length = mid.slider("Positions", 10, 1000, 100, step=10)
layout = right.radio("Layout", list(LAYOUTS), horizontal=True)
st.caption(LAYOUTS[layout])
table = sinusoidal_table(length, d_model, layout)
ui.chart(figs.table_figure(table, f"PE table: {length} positions × {d_model} dims"), "pe-table")

defaults = [d for d in (0, 1, 10, 40) if d < d_model]
dims = st.multiselect(
    "Dimensions",
    range(d_model),
    default=defaults,
    format_func=lambda d: f"{d} (λ = {pa.wavelength(d, d_model, layout):,.1f})",
)
names = [f"dim {d}, λ = {pa.wavelength(d, d_model, layout):,.1f}" for d in dims]
ui.chart(figs.curves_figure(table, dims, names), "pe-curves")
st.caption(
    f"Wavelengths run from 2π = {2 * math.pi:.2f} to "
    f"{pa.wavelength(d_model - 1, d_model, layout):,.0f} positions (≈ 10000·2π)."
)

shown = table[:MAX_SIMILARITY]
dots = pa.similarity(shown)
ui.chart(figs.similarity_figure(dots, "PE · PEᵀ: position-position dot products"), "pe-dots")
starts = [0, length // 4, length // 2]
offsets = pa.offset_dots(table, starts, length - 1 - starts[-1])
ui.chart(figs.offset_figure(offsets, starts), "pe-offsets")
shift = pa.shift_matrix(d_model, 1, layout)
error = float(np.abs(table[1:] - table[:-1] @ shift.T).max())
st.caption(
    f"PE(pos + k) = M_k PE(pos), a rotation of each (sin, cos) pair by k·ω_i, so the dot "
    f"product depends only on k. Check for k = 1: max error {error:.1e}."
)

st.subheader(f"What {name} adds")
arrays = {"sinusoid": table, "dot_products": dots, "offset_dots": offsets}
arrays |= model_numbers(name, text, length)
ui.downloads("positional", arrays, {"model": name, "d_model": d_model, "layout": layout})
