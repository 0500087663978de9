"""Figures of a live training run: loss and exact-match curves, and one layer's heads side by side.

Both take plain lists and ``Trace`` records (``training.live.runs.LiveSnapshot`` holds them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.figures.common import labels
from viz_transformer.figures.heatmap import MASKED_GREY, label_axes, weight_trace
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.trace import Trace

_DASH = ("solid", "dash")  # first run solid, second dashed
_COLOURS = ("#1f77b4", "#d62728")
_MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}


def curves_figure(curves: Mapping[str, Mapping[str, Sequence[float]]]) -> go.Figure:
    """Training loss and held-out exact match against the step, one line per run.

    Args:
        curves: run label -> ``{"step", "loss", "exact_match", ...}`` lists of equal length.
    """
    fig = make_subplots(1, 2, subplot_titles=("training loss", "held-out exact match"))
    for i, (label, run) in enumerate(curves.items()):
        line = {"color": _COLOURS[i % 2], "dash": _DASH[i % 2]}
        for col, key in enumerate(("loss", "exact_match"), start=1):
            fig.add_trace(
                go.Scatter(
                    x=list(run["step"]),
                    y=list(run[key]),
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1,
                    line=line,
                    mode="lines+markers",
                    marker_size=4,
                ),
                1,
                col,
            )
    fig.update_xaxes(title="step")
    fig.update_yaxes(range=[-0.02, 1.02], col=2)
    fig.update_layout(height=320, margin=_MARGIN, legend_orientation="h", legend_y=-0.25)
    return fig


def heads_figure(trace: Trace, kind: AttentionKind, title: str) -> go.Figure:
    """Every head of the last layer of ``kind``, side by side, on the shared 0-1 scale.

    Masked (future) cells of decoder self-attention show grey. Rows are labelled with the
    decoder input, columns with the keys (``Trace.tokens_for``).
    """
    maps = np.asarray(trace.get(kind))  # [layers, heads, q, k]
    if maps.ndim != 4:
        raise ValueError(f"the trace has no {KIND_TITLES[kind].lower()} to draw.")
    last = maps[-1]  # (heads, q, k)
    rows, cols = (labels(t) for t in trace.tokens_for(kind))
    heads = last.shape[0]
    fig = make_subplots(1, heads, horizontal_spacing=0.04)
    hover = "%{text}<br>weight %{z:.3f}<extra></extra>"
    for h in range(heads):
        z = last[h].copy()
        if kind == "decoder":
            z[np.triu_indices_from(z, k=1)] = np.nan  # the causal mask's cells, grey
        text = [[f"{r} → {c}" for c in cols] for r in rows]
        fig.add_trace(weight_trace(z, hover, text=text, showscale=h == heads - 1), 1, h + 1)
    label_axes(fig, rows, cols)  # numeric axes: a repeated word keeps its own row
    fig.update_xaxes(tickangle=-90)  # upright labels one cell apart: no block of slanted words
    for h in range(heads):  # head names under the maps: above, they collided with the title
        fig.update_xaxes(title_text=f"head {h}", row=1, col=h + 1)
    fig.update_yaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=True, col=1)
    fig.update_layout(
        title=f"{title}: {KIND_TITLES[kind].lower()}, layer {maps.shape[0] - 1}",
        height=300 + 14 * len(rows),
        margin=_MARGIN,
        plot_bgcolor=MASKED_GREY,
    )
    return fig
