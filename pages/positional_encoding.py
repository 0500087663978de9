"""Positional encoding: the paper's sinusoid and what the chosen model adds (section 3.5)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import math

import numpy as np
import streamlit as st

from pages.sections.positional_encoding import rope as rope_section
from pages.sections.positional_encoding.model_inputs import MAX_SIMILARITY, model_inputs
from viz_transformer.analysis import positional as pa
from viz_transformer.figures import positional as figs
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.ui import sidebar, widgets

LAYOUTS = {
    "interleaved": "Interleaved (paper): sin and cos of one frequency sit side by side, 2i, 2i+1.",
    "split": "Split (Marian, fairseq, Bergamot): all sines first, then all cosines.",
}


def curves(table: np.ndarray, wavelengths: np.ndarray) -> None:
    """Chosen dimensions of the table as curves over the positions, with their wavelengths."""
    d_model = table.shape[1]
    dims = st.multiselect(
        "Dimensions",
        range(d_model),
        default=[d for d in (0, 1, 10, 40) if d < d_model],
        format_func=lambda d: f"{d} (λ = {wavelengths[d]:,.1f})",
    )
    names = [f"dim {d}, λ = {wavelengths[d]:,.1f}" for d in dims]
    widgets.chart(figs.curves_figure(table, dims, names), "pe-curves")
    st.caption(
        f"Wavelengths run from 2π = {2 * math.pi:.2f} to {wavelengths[-1]:,.0f} positions "
        "(≈ 10000·2π)."
    )


def sinusoid(d_model: int, length: int, layout: pa.Layout) -> dict[str, np.ndarray]:
    """The table, its curves, position-position dot products and the shift check (section 3.5);
    returns the arrays shown, for the page's downloads."""
    table = sinusoidal_table(length, d_model, layout)
    views = pa.sinusoid_views(table, layout, MAX_SIMILARITY)
    title = f"PE table: {length} positions × {d_model} dims"
    widgets.chart(figs.table_figure(table, title), "pe-table")
    curves(table, views.wavelengths)
    title = "PE · PEᵀ: position-position dot products"
    widgets.chart(figs.similarity_figure(views.dots, title), "pe-dots")
    widgets.chart(figs.offset_figure(views.offsets, list(views.starts)), "pe-offsets")
    st.caption(
        f"PE(pos + k) = M_k PE(pos), a rotation of each (sin, cos) pair by k·ω_i, so the dot "
        f"product depends only on k. Check for k = 1: max error {views.shift_error:.1e}."
    )
    return {"sinusoid": table, "dot_products": views.dots, "offset_dots": views.offsets}


def positional_encoding_page() -> None:
    """The paper's sinusoid at a chosen size, then the chosen model's own input vectors."""
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("positional_encoding"),
        "Attention ignores order, so each position gets a vector added to its token's embedding "
        "(section 3.5): sines and cosines whose wavelengths grow geometrically from 2π to "
        "10000·2π.",
        r"PE_{(pos,2i)}=\sin\!\left(pos/10000^{2i/d_{model}}\right),\quad "
        r"PE_{(pos,2i+1)}=\cos\!\left(pos/10000^{2i/d_{model}}\right)",
    )
    left, mid, right = st.columns(3)
    d_model = left.slider("d_model", 16, 1024, 128, step=16)
    length = mid.slider("Positions", 10, 1000, 100, step=10)
    layout = right.radio("Layout", list(LAYOUTS), horizontal=True)
    st.caption(LAYOUTS[layout])
    arrays = sinusoid(d_model, length, layout)
    st.subheader(f"What {name} adds")
    arrays |= model_inputs(name, text, length)
    arrays |= rope_section.draw(name)
    widgets.downloads("positional", arrays, {"model": name, "d_model": d_model, "layout": layout})


positional_encoding_page()
