"""Figures of what heads do: a layers x heads map of one score (importance, patching, a role),
and the logit lens table, from arrays only."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_transformer.figures.heatmap import with_subtitle


def head_grid(
    scores: np.ndarray,
    title: str,
    colorbar: str,
    diverging: bool = False,
    subtitle: str | None = None,
) -> go.Figure:
    """One cell per head: ``scores`` ``[layers, heads]``, layer 0 on top, value in each cell.

    ``diverging`` centres a red-blue scale on 0 (importance and patching can be negative).
    """
    layers, heads = scores.shape
    bound = float(np.nanmax(np.abs(scores))) if diverging and scores.size else None
    text = [[f"{v:.3f}" for v in row] for row in scores]
    fig = go.Figure(
        go.Heatmap(
            z=scores,
            x=[f"H{h}" for h in range(heads)],
            y=[f"L{layer}" for layer in range(layers)],
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu_r" if diverging else "Viridis",
            zmid=0 if diverging else None,
            zmin=-bound if bound else None,
            zmax=bound if bound else None,
            colorbar={"title": colorbar},
            hovertemplate="layer %{y}, head %{x}<br>" + colorbar + " %{z:.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=with_subtitle(title, subtitle) if subtitle else title,
        xaxis_title="head",
        yaxis_title="layer",
        yaxis={"autorange": "reversed"},
        height=max(220, 48 * layers + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def lens_figure(
    inputs: tuple[str, ...], tokens: tuple[tuple[str, ...], ...], probs: np.ndarray
) -> go.Figure:
    """The logit lens as a table-like map: a row per decoder layer, a column per decoder
    position, each cell that layer's most likely next token, coloured by its probability."""
    layers = len(tokens)
    cols = [f"{i}: {t}" for i, t in enumerate(inputs)]
    fig = go.Figure(
        go.Heatmap(
            z=probs,
            x=cols,
            y=[f"after layer {i}" for i in range(layers)],
            text=[list(row) for row in tokens],
            texttemplate="%{text}",
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar={"title": "probability"},
            hovertemplate="%{y}, input %{x}<br>next: %{text} (%{z:.3f})<extra></extra>",
        )
    )
    fig.update_layout(
        title="Logit lens: each decoder layer's stream read through the output layer",
        xaxis_title="decoder input (position: token)",
        yaxis={"autorange": "reversed"},
        height=max(220, 60 * layers + 160),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig
