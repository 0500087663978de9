"""Softmax-saturation figures (section 3.2.1, footnote 4) from plain arrays and ``Trace`` tokens."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.figures.common import labels
from viz_transformer.figures.heatmap import weight_trace

MODES = {"scaled": "with 1/√d_k", "unscaled": "without scale"}
LINES = {"scaled": {"color": "#1f77b4"}, "unscaled": {"color": "#d62728", "dash": "dash"}}
STATS = {"entropy": "entropy (nats)", "max_weight": "max weight", "jacobian_norm": "‖Jacobian‖_F"}
_MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}


def histogram(values: np.ndarray, bins: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres, densities) of ``values``: what ``dot_histogram`` draws."""
    density, edges = np.histogram(values, bins=bins, density=True)
    return (edges[:-1] + edges[1:]) / 2, density


def dot_histogram(raw: np.ndarray, d_k: int) -> go.Figure:
    """Distribution of q.k (variance d_k) beside q.k / sqrt(d_k) (variance 1), footnote 4."""
    fig = make_subplots(
        1,
        2,
        subplot_titles=(
            f"q·k: variance {raw.var():.1f} (d_k = {d_k})",
            f"q·k / √d_k: variance {(raw / np.sqrt(d_k)).var():.3f}",
        ),
    )
    for col, values in enumerate((raw, raw / np.sqrt(d_k)), start=1):
        x, y = histogram(values)
        fig.add_trace(go.Bar(x=x, y=y, showlegend=False, marker_line_width=0), 1, col)
    fig.update_xaxes(title="score")
    fig.update_yaxes(title="density", col=1)
    fig.update_layout(bargap=0, height=360, margin=_MARGIN)
    return fig


def curves_figure(curves: Mapping[str, np.ndarray], n_keys: int) -> go.Figure:
    """Entropy, max weight and Jacobian norm against d_k (log axis), with and without the scale."""
    fig = make_subplots(1, 3, subplot_titles=list(STATS.values()), horizontal_spacing=0.07)
    for col, stat in enumerate(STATS, start=1):
        for mode, name in MODES.items():
            fig.add_trace(
                go.Scatter(
                    x=curves["d_k"],
                    y=curves[f"{stat}_{mode}"],
                    name=name,
                    legendgroup=mode,
                    showlegend=col == 1,
                    line=LINES[mode],
                ),
                1,
                col,
            )
    fig.update_xaxes(type="log", title="d_k", dtick=1)  # 1, 10, 100: no 2 and 5 between
    fig.update_layout(
        title=f"Softmax over {n_keys} random keys, averaged over seeded queries",
        height=380,
        margin=_MARGIN,
    )
    return fig


def weights_figure(weights: np.ndarray, temperature: float) -> go.Figure:
    """Bars of one row of weights softmax(s / T)."""
    fig = go.Figure(go.Bar(x=list(range(len(weights))), y=weights))
    fig.update_layout(
        title=f"softmax(s / T), T = {temperature:g}",
        xaxis_title="key",
        yaxis_title="weight",
        yaxis_range=[0, 1],
        height=320,
        margin=_MARGIN,
    )
    return fig


def pattern_pair(
    scaled: np.ndarray, unscaled: np.ndarray, rows: Sequence[str], cols: Sequence[str]
) -> go.Figure:
    """One head's pattern ``[q, k]`` with the scale (left) and without it (right)."""
    fig = make_subplots(1, 2, subplot_titles=list(MODES.values()), horizontal_spacing=0.12)
    row_labels, col_labels = labels(list(rows)), labels(list(cols))
    for col, z in enumerate((scaled, unscaled), start=1):
        fig.add_trace(
            weight_trace(
                z, "query %{y}, key %{x}<br>weight %{z:.3f}<extra></extra>", showscale=col == 2
            ),
            1,
            col,
        )
        fig.update_xaxes(
            tickmode="array", tickvals=list(range(len(cols))), ticktext=col_labels, col=col
        )
        fig.update_yaxes(
            tickmode="array",
            tickvals=list(range(len(rows))),
            ticktext=row_labels,
            autorange="reversed",
            col=col,
        )
    fig.update_xaxes(tickangle=-60)
    fig.update_layout(height=max(380, 24 * len(rows) + 180), margin=_MARGIN)
    return fig


def training_figure(curves: Mapping[str, Mapping[str, list[float]]], model: str) -> go.Figure:
    """Training loss and gradient norm of one paper model trained with and without the scale."""
    fig = make_subplots(1, 2, subplot_titles=("training loss", "gradient norm"))
    for mode, name in MODES.items():
        run = curves[mode]
        for col, key in enumerate(("loss", "grad_norm"), start=1):
            fig.add_trace(
                go.Scatter(
                    x=run["step"],
                    y=run[key],
                    name=name,
                    legendgroup=mode,
                    showlegend=col == 1,
                    line=LINES[mode],
                ),
                1,
                col,
            )
    fig.update_xaxes(title="step")
    ends = [curves[mode]["step"][-1] for mode in MODES]
    if len(set(ends)) > 1:  # one run is shorter: show the steps both took (zoom out for more)
        fig.update_xaxes(range=[0, min(ends)])
    fig.update_layout(title=f"{model}: trained twice", height=360, margin=_MARGIN)
    return fig
