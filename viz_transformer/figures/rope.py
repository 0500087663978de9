"""Figures of rotary positions: the angle of every (q, k) pair per position, and the score of one
q, k pair against the offset m - n."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_transformer.figures.common import series_style


def angles_figure(angles: np.ndarray) -> go.Figure:
    """Heatmap of ``analysis.rope.pair_angles``: positions x frequency pairs, in radians."""
    fig = go.Figure(
        go.Heatmap(
            z=angles,
            colorscale="Twilight",
            zmin=-np.pi,
            zmax=np.pi,
            colorbar={"title": "angle (rad)"},
            hovertemplate="position %{y}, pair %{x}: %{z:.2f} rad<extra></extra>",
        )
    )
    fig.update_layout(
        title="Rotation of each (q, k) pair of dimensions by position (fast pairs left)",
        xaxis_title="pair i (dims i and i + d_head/2)",
        yaxis_title="position",
        height=420,
    )
    return fig


def offset_figure(rows: np.ndarray, starts: list[int]) -> go.Figure:
    """``analysis.rope.score_by_offset`` rows as lines over the offset m - n."""
    fig = go.Figure()
    for i, (row, n0) in enumerate(zip(rows, starts, strict=True)):
        style = series_style(i)  # the curves coincide: each dash shows through the others
        style["line"]["width"] = 5 - 1.5 * (i % 3)
        fig.add_trace(go.Scatter(y=row, name=f"key at n = {n0}", **style))
    fig.update_layout(
        title="Score R_m q · R_n k of one fixed q, k pair against the offset m - n",
        xaxis_title="offset m - n",
        yaxis_title="score",
        height=360,
    )
    return fig
