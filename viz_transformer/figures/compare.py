"""Figures of a head-by-head comparison: the distance matrix, a matched pair's two maps and their
difference, and the drift of every head over a run's checkpoints. Pure functions of arrays and
``Trace`` records."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.analysis.comparison.distances import HeadMatch
from viz_transformer.figures.common import labels, series_style
from viz_transformer.figures.heatmap import label_axes, weight_trace
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind, Head, head_label
from viz_transformer.records.trace import Trace

DIVERGING = "RdBu_r"  # red: A attends more, blue: B attends more, white: the same


def distance_figure(
    distance: np.ndarray, name_a: str, name_b: str, matching: Sequence[HeadMatch]
) -> go.Figure:
    """Heatmap of ``[layers_a, heads_a, layers_b, heads_b]`` distances, one row per head of A and
    one column per head of B, the matched pairs circled."""
    la, ha, lb, hb = distance.shape
    rows = [head_label((l_, h)) for l_ in range(la) for h in range(ha)]
    cols = [head_label((l_, h)) for l_ in range(lb) for h in range(hb)]
    z = distance.reshape(la * ha, lb * hb)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=rows,
            zmin=0,
            zmax=1,
            colorscale="Viridis_r",
            colorbar={"title": {"text": "JS distance", "side": "right"}},  # not over the top tick
            hovertemplate="A %{y} vs B %{x}: %{z:.4f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[head_label(m.b) for m in matching],
            y=[head_label(m.a) for m in matching],
            mode="markers",
            name="matched pair",
            hoverinfo="skip",
            marker={"symbol": "circle-open", "size": 9, "color": "#d62728", "line": {"width": 2}},
        )
    )
    side = max(360, min(900, 14 * max(len(rows), len(cols)) + 160))
    fig.update_layout(
        title="JS distance of every head pair: A's heads (rows), B's (columns)",
        xaxis={"title": f"B: {name_b}", "type": "category", "tickangle": -90},
        yaxis={"title": f"A: {name_a}", "type": "category", "autorange": "reversed"},
        height=side,
        margin={"l": 80, "r": 20, "t": 60, "b": 80},
        showlegend=False,
    )
    return fig


def pair_figure(a: Trace, b: Trace, kind: AttentionKind, pair: HeadMatch) -> go.Figure:
    """Head ``pair.a`` of A, head ``pair.b`` of B on the same sentence, and A minus B on a
    diverging scale centred at 0: one row of three maps sharing their token rows, labelled once
    on the left (a cross-attention row by the token A predicts there, as every page labels it),
    short titles over each map and the models' names in the figure's title."""
    za = np.asarray(a.get(kind))[pair.a]  # (q, k)
    zb = np.asarray(b.get(kind))[pair.b]
    rows, cols = (labels(t) for t in a.tokens_for(kind))
    ylabel = "query"
    if kind == "cross" and a.pred_tokens:
        rows, ylabel = labels(a.pred_tokens), "token A predicts (query)"
    names = (f"A {head_label(pair.a)}", f"B {head_label(pair.b)}", "A − B")
    fig = make_subplots(1, 3, subplot_titles=names, horizontal_spacing=0.03, shared_yaxes=True)
    text = [[f"{r} → {c}" for c in cols] for r in rows]
    hover = "%{text}<br>%{z:.3f}<extra></extra>"
    for col, z in ((1, za), (2, zb)):
        fig.add_trace(weight_trace(z, hover, text=text, showscale=False), 1, col)
    diff = za - zb
    span = max(float(np.abs(diff).max()), 1e-6)  # symmetric: white is exactly 0
    fig.add_trace(
        go.Heatmap(
            z=diff,
            zmid=0,
            zmin=-span,
            zmax=span,
            colorscale=DIVERGING,
            text=text,
            # plain decimals: d3's default SI prefixes would print 0.0004 as "400µ"
            colorbar={"title": {"text": "A − B"}, "tickformat": ".2~g"},
            hovertemplate=hover,
        ),
        1,
        3,
    )
    label_axes(fig, rows, cols)  # every subplot: the same tokens
    fig.update_xaxes(tickangle=-90)  # upright labels stay under their own map
    fig.update_yaxes(showticklabels=False, col=2)
    fig.update_yaxes(showticklabels=False, col=3)
    fig.update_yaxes(title_text=ylabel, col=1)
    fig.update_layout(
        title=f"{KIND_TITLES[kind]}: matched pair at distance {pair.distance:.4f} "
        f"(A: {a.model_name}, B: {b.model_name})",
        height=max(320, min(700, 22 * len(rows) + 200)),
        margin={"t": 90},
    )
    return fig


def _drawn(style: dict, width: float) -> dict:
    """``style`` (``common.series_style``) with its line ``width`` set."""
    style["line"]["width"] = width
    return style


def drift_figure(drift: np.ndarray, steps: Sequence[int], chosen: int | None = None) -> go.Figure:
    """One line per head: its distance to the same head of the last checkpoint, by step.

    Args:
        drift: ``[checkpoints, layers, heads]`` (``vt.drift``); steps: each checkpoint's step.
        chosen: the flat index (layer * heads + head) of the head drawn thick, or None.
    """
    _, n_layers, n_heads = drift.shape
    fig = go.Figure()
    for layer in range(n_layers):
        for head in range(n_heads):
            flat = layer * n_heads + head
            fig.add_trace(
                go.Scatter(
                    x=list(steps),
                    y=drift[:, layer, head],
                    name=head_label((layer, head)),
                    **_drawn(series_style(flat), 4 if flat == chosen else 1.5),
                    hovertemplate=f"{head_label((layer, head))}<br>step %{{x}}: %{{y:.4f}}"
                    "<extra></extra>",
                )
            )
    fig.update_layout(
        title="Each head's distance to where it ended (click a line)",
        xaxis_title="training step",
        yaxis_title="JS distance to the last checkpoint",
        yaxis={"rangemode": "tozero"},
        height=420,
        clickmode="event+select",
    )
    return fig


def checkpoint_maps(
    traces: Sequence[Trace], steps: Sequence[int], kind: AttentionKind, head: Head
) -> go.Figure:
    """One head's map on one sentence at each checkpoint, side by side, oldest first."""
    n = len(traces)
    fig = make_subplots(1, n, subplot_titles=[f"step {s}" for s in steps], horizontal_spacing=0.02)
    rows, cols = (labels(t) for t in traces[-1].tokens_for(kind))
    text = [[f"{r} → {c}" for c in cols] for r in rows]
    for col, tr in enumerate(traces, 1):
        z = np.asarray(tr.get(kind))[head]
        fig.add_trace(
            weight_trace(
                z,
                f"step {steps[col - 1]}<br>%{{text}}: %{{z:.3f}}<extra></extra>",
                showscale=False,
                text=text,
            ),
            1,
            col,
        )
        fig.update_yaxes(autorange="reversed", showticklabels=col == 1, row=1, col=col)
        fig.update_xaxes(showticklabels=col == 1, row=1, col=col)
    # the first map carries the token labels (a dozen maps side by side leave no room for more)
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=rows, row=1, col=1)
    fig.update_xaxes(tickvals=list(range(len(cols))), ticktext=cols, tickangle=-90, row=1, col=1)
    fig.update_layout(
        title=f"{KIND_TITLES[kind]}, {head_label(head)} at each checkpoint",
        height=max(260, min(520, 16 * len(rows) + 160)),
    )
    return fig
