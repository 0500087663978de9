"""Figures of one head's page over a corpus (``analysis.corpus.head_page``): its most frequent
query -> key token pairs, its query-key distances, and its five statistics among every head's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.figures.common import labels

PAIRS_SHOWN = 15  # bars of the token-pair chart
MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}
PICKED, OTHERS = "#d62728", "#9db4cf"
SELF_ONLY = ("prev_token", "diagonal")  # positions of one sequence: no cross-attention heads


def pairs_figure(pairs: pd.DataFrame, title: str, top: int = PAIRS_SHOWN) -> go.Figure:
    """The ``top`` query -> key token pairs by attention, largest on top.

    Args:
        pairs: columns ``query, key, weight, share`` (``HeadPass.pairs``, largest first).
    """
    part = pairs.head(top).iloc[::-1]
    names = [
        f"{q} → {k}"
        for q, k in zip(labels(list(part["query"])), labels(list(part["key"])), strict=True)
    ]
    hover = "%{y}<br>%{x:.1%} of the head's attention<br>weight %{customdata:.2f}<extra></extra>"
    fig = go.Figure(
        go.Bar(
            x=part["share"],
            y=names,
            orientation="h",
            marker_color="#4c78a8",
            customdata=part["weight"],
            hovertemplate=hover,
        )
    )
    fig.update_layout(
        title=title,
        height=120 + 24 * len(part),
        margin=MARGIN,
        xaxis={"title": "share of all its attention", "tickformat": ".0%"},
        yaxis={"type": "category", "automargin": True},
    )
    return fig


def distance_figure(offsets: np.ndarray, mass: np.ndarray, title: str) -> go.Figure:
    """Where the head looks relative to the query: attention at each offset ``query - key``."""
    hover = "query − key = %{x}<br>%{y:.1%} of the attention<extra></extra>"
    fig = go.Figure(go.Bar(x=offsets, y=mass, marker_color="#4c78a8", hovertemplate=hover))
    fig.update_layout(
        title=title,
        height=300,
        margin=MARGIN,
        bargap=0.1,
        xaxis_title="query position − key position (0: itself, 1: the previous token)",
        yaxis={"title": "share of attention", "tickformat": ".0%"},
    )
    return fig


def heads_strip_figure(beside: pd.DataFrame, stats: tuple[str, ...], title: str) -> go.Figure:
    """Every head's value of each statistic (one strip each), the chosen head a large red diamond.

    Args:
        beside: ``heads_beside`` (columns kind, layer, head, the statistics, ``picked``).

    A point's ``customdata`` is (kind, layer, head), so a click can move to that head. The
    strips of ``SELF_ONLY`` statistics leave out cross-attention heads: their queries and keys
    are positions of two different sentences, so ``P[q, q - 1]`` and ``P[q, q]`` mean nothing.
    """
    fig = make_subplots(rows=1, cols=len(stats), subplot_titles=stats, horizontal_spacing=0.04)
    rng = np.random.default_rng(0)  # the same jitter on every draw
    jitter = rng.uniform(-0.3, 0.3, len(beside))
    custom = np.stack([beside["kind"], beside["layer"], beside["head"]], axis=-1)
    picked = beside["picked"].to_numpy(bool)
    cross = (beside["kind"] == "cross").to_numpy(bool)
    for col, stat in enumerate(stats, start=1):
        shown = ~cross if stat in SELF_ONLY else np.ones(len(beside), bool)
        for mask, color, size, name in (
            (~picked & shown, OTHERS, 7, "other heads"),
            (picked & shown, PICKED, 14, "this head"),
        ):
            marker = {
                "color": color,
                "size": size,  # not told by colour alone: a diamond
                "symbol": "diamond" if name == "this head" else "circle",
            }
            hover = (
                "%{customdata[0]} L%{customdata[1]} H%{customdata[2]}<br>"
                + stat
                + " %{y:.3f}<extra></extra>"
            )
            fig.add_trace(
                go.Scatter(
                    x=jitter[mask],
                    y=beside[stat].to_numpy()[mask],
                    mode="markers",
                    marker=marker,
                    customdata=custom[mask],
                    hovertemplate=hover,
                    name=name,
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(showticklabels=False, range=[-0.5, 0.5], row=1, col=col)
    fig.update_layout(
        title=title, height=360, margin={**MARGIN, "t": 80}, legend={"orientation": "h", "y": -0.05}
    )
    return fig
