"""Figures of heads across a corpus: one head's statistic over the sentences, and the joint
query/key scatter of one head (``analysis.corpus_qk``), from arrays and tables only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

ROLE_COLORS = {"query": "#1f77b4", "key": "#d62728"}


def stat_distribution(values: np.ndarray, stat: str, title: str) -> go.Figure:
    """A histogram of one head's ``stat`` over the sentences (NaN left out)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    hover = stat + " %{x}<br>%{y} sentences<extra></extra>"
    fig = go.Figure(go.Histogram(x=v, nbinsx=40, marker_color="#4c78a8", hovertemplate=hover))
    fig.update_layout(
        title=f"{title} ({len(v):,} sentences)",
        xaxis_title=stat,
        yaxis_title="sentences",
        height=300,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        bargap=0.05,
    )
    return fig


def qk_scatter(points: pd.DataFrame, color: str, title: str) -> go.Figure:
    """Queries and keys of one head projected together (columns of ``qk_points``).

    Args:
        points: rows with ``x, y, role, position, token, sentence``.
        color: ``"role"`` (queries blue, keys red) or ``"position"`` (a continuous scale).
        title: the figure's title.
    """
    fig = go.Figure()
    hover = "%{customdata[0]} “%{customdata[1]}” at %{customdata[2]}<br>%{customdata[3]}"
    for role, part in points.groupby("role", sort=False):
        custom = np.stack([part["role"], part["token"], part["position"],
                           part["sentence"].str.slice(0, 80)], axis=-1)  # fmt: skip
        symbol = "circle" if role == "query" else "diamond"
        marker: dict[str, object] = {"size": 5, "opacity": 0.7, "symbol": symbol}
        if color == "position":
            marker.update(color=part["position"], colorscale="Viridis", showscale=role == "query",
                          colorbar={"title": "position"})  # fmt: skip
        else:
            marker["color"] = ROLE_COLORS.get(str(role), "#888")
        fig.add_trace(go.Scattergl(x=part["x"], y=part["y"], mode="markers", name=str(role),
                                   marker=marker, customdata=custom,
                                   hovertemplate=hover + "<extra></extra>"))  # fmt: skip
    fig.update_layout(
        title=title,
        height=520,
        xaxis={"showticklabels": False, "title": "component 1"},
        yaxis={"showticklabels": False, "title": "component 2"},
        legend={"orientation": "h", "y": -0.05},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
