"""The positional page's section on rotary positions, for a model that has them: how each (q, k)
pair turns with the position, and why the score depends only on the offset m - n."""

from __future__ import annotations

import numpy as np
import streamlit as st

from viz_transformer.analysis import rope
from viz_transformer.figures import rope as figs
from viz_transformer.ui import caches, widgets

POSITIONS = 128  # positions tabulated: enough for the slowest visible pairs to turn


def draw(name: str) -> dict[str, np.ndarray]:
    """The section, or nothing for a model without rotary positions; returns the arrays shown."""
    spec = caches.spec(name)
    if spec.positions != "rotary":
        return {}
    tables = caches.rotary_tables(name, POSITIONS)
    if tables is None:
        st.info(f"{name} says it uses rotary positions but exposes no rotary module to read.")
        return {}
    cos, sin = tables
    st.subheader(f"Rotary positions in {name}")
    st.markdown(
        "Nothing is added to the token embedding. Instead, in every layer, each query and key is "
        "split into pairs of dimensions and pair i is **rotated** by the angle position × θᵢ, "
        "θᵢ = base^(−2i/d_head). The paper's sinusoid is *added* once at the input; rotary "
        "positions are *multiplied into* q and k, so q·k sees only how far apart two tokens are."
    )
    angles = rope.pair_angles(cos, sin)
    widgets.chart(figs.angles_figure(angles), "rope-angles")
    q, k = rope.fixed_pair(cos.shape[1])
    table = rope.scores(q, k, cos, sin)
    starts = [0, POSITIONS // 4, POSITIONS // 2]
    rows = rope.score_by_offset(table, starts)
    widgets.chart(figs.offset_figure(rows, starts), "rope-offsets")
    error = rope.shift_error(table, 7)
    st.caption(
        "One fixed random q, k pair, rotated with the model's own cos/sin tables: the three "
        "curves (key at different positions) lie on top of each other. Shifting both positions "
        f"by 7 changes the score by at most {error:.1e} of its largest value (float rounding): "
        "R_mᵀ R_n = R_(n−m)."
    )
    return {"rope_angles": angles, "rope_scores": table, "rope_offset_scores": rows}
