"""Figures of heads across a corpus: one head's statistic over the sentences, and the joint
query/key scatter of one head (``analysis.corpus.qk``), from arrays and tables only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

ROLE_COLORS = {"query": "#1f77b4", "key": "#d62728"}
TOP_TOKENS = 10  # tokens coloured one each in the token view; more colours stop being told apart
TOKEN_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
HOVER = "%{customdata[0]} “%{customdata[1]}” at %{customdata[2]}<br>%{customdata[3]}"


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
        color: ``"role"`` (queries blue, keys red), ``"position"`` (a continuous scale) or
            ``"token"`` (the ``TOP_TOKENS`` most frequent tokens one colour each, the rest grey;
            queries circles, keys diamonds).
        title: the figure's title.
    """
    if color == "token":
        return _layout(_by_token(points), title)
    fig = go.Figure()
    for role, part in points.groupby("role", sort=False):
        custom = np.stack(
            [part["role"], part["token"], part["position"], part["sentence"].str.slice(0, 80)],
            axis=-1,
        )
        symbol = "circle" if role == "query" else "diamond"
        marker: dict[str, object] = {"size": 5, "opacity": 0.7, "symbol": symbol}
        if color == "position":
            marker.update(
                color=part["position"],
                colorscale="Viridis",
                showscale=role == "query",
                colorbar={"title": "position"},
            )
        else:
            marker["color"] = ROLE_COLORS.get(str(role), "#888")
        fig.add_trace(
            go.Scattergl(
                x=part["x"],
                y=part["y"],
                mode="markers",
                name=str(role),
                marker=marker,
                customdata=custom,
                hovertemplate=HOVER + "<extra></extra>",
            )
        )
    return _layout(fig, title)


def _by_token(points: pd.DataFrame) -> go.Figure:
    """One trace per frequent token and role (its colour, the role's symbol), the rest grey."""
    top = points["token"].value_counts().index[:TOP_TOKENS].tolist()
    group = points["token"].where(points["token"].isin(top), "other")
    fig = go.Figure()
    for token in [*top, "other"]:
        colour = "#bbb" if token == "other" else TOKEN_COLORS[top.index(token) % len(TOKEN_COLORS)]
        for role, part in points[group == token].groupby("role", sort=False):
            custom = np.stack(
                [part["role"], part["token"], part["position"], part["sentence"].str.slice(0, 80)],
                axis=-1,
            )
            marker = {
                "size": 5,
                "opacity": 0.7,
                "color": colour,
                "symbol": "circle" if role == "query" else "diamond",
            }
            fig.add_trace(
                go.Scattergl(
                    x=part["x"],
                    y=part["y"],
                    mode="markers",
                    name=f"{token} ({role})",
                    legendgroup=str(token),
                    marker=marker,
                    customdata=custom,
                    hovertemplate=HOVER + "<extra></extra>",
                )
            )
    return fig


def _layout(fig: go.Figure, title: str) -> go.Figure:
    fig.update_layout(
        title=title,
        height=520,
        xaxis={"showticklabels": False, "title": "component 1"},
        yaxis={"showticklabels": False, "title": "component 2"},
        legend={"orientation": "h", "y": -0.05},
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
