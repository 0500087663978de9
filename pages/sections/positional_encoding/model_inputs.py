"""The positional page's model section: what the chosen model adds to its token embeddings
(section 3.4-3.5), the norms of both parts, and a learned table beside the paper's sinusoid."""

from __future__ import annotations

import numpy as np
import streamlit as st

from viz_transformer.analysis import positional as pa
from viz_transformer.figures import positional as figs
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.ui import caches, switch, widgets

NO_TABLE = {
    "rotary": "rotates each query and key by its position inside attention (RoPE)",
    "relative": "adds a learned bias per query-key offset to the attention scores",
}
MAX_SIMILARITY = 400  # rows of the position-position matrices drawn: more is too heavy to send


def _norms(name: str, text: str, token_norms: np.ndarray, pos_norms: np.ndarray) -> None:
    """Norms of the scaled token embeddings and of the position vectors, over the vocabulary or
    along the sentence."""
    over = st.radio("Norms over", ["the vocabulary", "the sentence"], horizontal=True)
    if over == "the vocabulary":
        widgets.chart(figs.vocab_norms_figure(token_norms, pos_norms), "vocab-norms")
        return
    try:
        per = pa.sentence_norms(caches.model(name), text)
    except ValueError as exc:
        widgets.show_error(exc)
        return
    fig = figs.sentence_norms_figure(per["tokens"], per["token_norm"], per["position_norm"])
    widgets.chart(fig, "sentence-norms")


def model_inputs(name: str, text: str, length: int) -> dict[str, np.ndarray]:
    """Section 4 of the page: the model's token-embedding norms, and its table when it adds one.

    Args:
        name: the model.
        text: the sidebar's sentence, for the norms along it.
        length: how many positions the page's sinusoid shows; a learned table is cut to it.

    Returns:
        The arrays shown, for the page's downloads (empty when nothing is added).
    """
    positions = caches.spec(name).positions
    parts = caches.input_vectors(name)
    if parts.positions is None:
        message = (
            f"{name} {NO_TABLE.get(positions, 'exposes no position table')}: nothing is "
            "added to the input embeddings, so there is no table to show."
        )
        wanted = lambda spec: spec.positions in ("learned", "sinusoidal")  # noqa: E731
        switch.offer_switch(message, name, wanted, "a position table")
        return {}
    norms = pa.input_norms(parts, length, MAX_SIMILARITY, cosine=positions == "learned")
    lo, mid, hi = norms.token_percentiles
    st.markdown(
        f"Token embeddings × {parts.scale:.3g}: median norm **{mid:.2f}** (5–95 %: "
        f"{lo:.2f}–{hi:.2f}); position vectors ({parts.source}): median norm "
        f"**{norms.position_median:.2f}** (a sinusoid's is √(d_model/2))."
    )
    _norms(name, text, parts.token_norms, norms.position_norms)
    if parts.note is not None:
        st.caption(parts.note)
    table = norms.positions
    if norms.cosine is not None:
        sine = sinusoidal_table(len(table), table.shape[1])
        titles = (f"{name}: learned table", "paper sinusoid, same size")
        widgets.chart(figs.pair_figure(table, sine, titles), "learned-vs-sinusoid")
        fig = figs.similarity_figure(norms.cosine, "Learned positions: cosine similarity")
        widgets.chart(fig, "cosine")
    return {"model_positions": table, "token_norms": parts.token_norms}
