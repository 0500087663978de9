"""Positional-encoding figures (section 3.5) from plain arrays: tables, curves, norms."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.figures.common import labels, series_style
from viz_transformer.figures.heatmap import block_heatmap
from viz_transformer.records.tiles import block_reduce

DIVERGING = "RdBu"
_MARGIN = {"l": 10, "r": 10, "t": 50, "b": 10}
MAP_CELLS = 256 * 256  # cells a table or matrix is sent with; a larger one as block means


def _heatmap(z: np.ndarray, x_name: str, y_name: str, bound: float | None = None) -> go.Heatmap:
    """``z`` on a symmetric scale; past ``MAP_CELLS`` cells, the mean of each block (placed at
    its rows and columns), so the browser gets what a screen shows (a 1,000 x 1,024 table was a
    7.3 MB update); the downloads keep every number."""
    if bound is None:  # symmetric so white is 0; a percentile, so one outlier cannot wash it out
        bound = float(np.percentile(np.abs(z), 99.5)) or 1.0
    f = math.ceil(math.sqrt(z.size / MAP_CELLS))  # blocks of about f x f cells
    small, by, bx = block_reduce(np.asarray(z, dtype=np.float32), -(-max(z.shape) // f), "mean")
    style = {"zmin": -bound, "zmax": bound, "colorscale": DIVERGING}
    if (by, bx) != (1, 1):
        return block_heatmap(small, by, bx, "", f"{y_name}s", f"{x_name}s", **style)
    where = f"{y_name} %{{y}}, {x_name} %{{x}}"
    return go.Heatmap(z=small, hovertemplate=f"{where}<br>%{{z:.3f}}<extra></extra>", **style)


def _position_map(
    z: np.ndarray, x_name: str, title: str, height: int, **yaxis: object
) -> go.Figure:
    """``z`` with a row per position, top to bottom, and a column per ``x_name``."""
    fig = go.Figure(_heatmap(z, x_name, "position"))
    fig.update_yaxes(title="position", autorange="reversed", **yaxis)
    fig.update_layout(title=title, xaxis_title=x_name, height=height, margin=_MARGIN)
    return fig


def _lines_layout(fig: go.Figure, title: str, x_title: str, y_title: str) -> go.Figure:
    """The layout every line chart here shares: ``fig``, titled."""
    fig.update_layout(
        title=title, xaxis_title=x_title, yaxis_title=y_title, height=380, margin=_MARGIN
    )
    return fig


def table_figure(table: np.ndarray, title: str) -> go.Figure:
    """Heatmap of a position table ``[positions, d_model]``: rows positions, columns dimensions."""
    return _position_map(table, "dimension", title, 460)


def pair_figure(left: np.ndarray, right: np.ndarray, titles: tuple[str, str]) -> go.Figure:
    """Two position tables side by side (a learned table beside the sinusoid of the same size)."""
    fig = make_subplots(1, 2, subplot_titles=titles, horizontal_spacing=0.06)
    for col, z in enumerate((left, right), start=1):
        fig.add_trace(_heatmap(z, "dimension", "position"), 1, col)
    fig.update_traces(showscale=False)
    fig.update_yaxes(autorange="reversed", title="position", col=1)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=460, margin=_MARGIN)
    return fig


def curves_figure(table: np.ndarray, dims: list[int], names: list[str]) -> go.Figure:
    """Chosen columns of a table over the positions, one line each (``names`` label them)."""
    fig = go.Figure()
    for i, (dim, name) in enumerate(zip(dims, names, strict=True)):
        fig.add_trace(go.Scatter(y=table[:, dim], name=name, **series_style(i)))
    return _lines_layout(fig, "Chosen dimensions over the positions", "position", "PE value")


def similarity_figure(matrix: np.ndarray, title: str) -> go.Figure:
    """A position-position matrix (dot products or cosine similarities)."""
    return _position_map(matrix, "position", title, 520, scaleanchor="x")


def offset_figure(dots: np.ndarray, starts: list[int]) -> go.Figure:
    """PE(pos) . PE(pos + k) against k, one line per start position (they coincide)."""
    fig = go.Figure()
    dashes = ("solid", "dash", "dot")  # so the lines show through each other where they coincide
    for i, (row, start) in enumerate(zip(dots, starts, strict=True)):
        line = {"dash": dashes[i % 3], "width": 5 - 1.5 * (i % 3)}
        fig.add_trace(go.Scatter(y=row, mode="lines", name=f"pos = {start}", line=line))
    return _lines_layout(
        fig, "Dot product depends only on the offset k", "offset k", "PE(pos) · PE(pos + k)"
    )


def vocab_norms_figure(token_norms: np.ndarray, position_norms: np.ndarray) -> go.Figure:
    """Histogram of |scale * embedding| over the vocabulary; the position vectors' norms as a
    line at their median and a band from their 5th to 95th percentile (one line for a sinusoid)."""
    fig = go.Figure(go.Histogram(x=token_norms, name="token: |scale · embedding|"))
    lo, mid, hi = np.percentile(position_norms, [5, 50, 95])
    if hi > lo:
        fig.add_vrect(x0=lo, x1=hi, fillcolor="#ff7f0e", opacity=0.2, line_width=0)
    fig.add_vline(
        x=mid,
        line={"color": "#ff7f0e", "width": 3},
        annotation_text=f"position vectors: {mid:.2f}",
    )
    fig.update_layout(
        title="Norms of what is added: token embeddings (vocabulary) vs position vectors",
        xaxis_title="L2 norm",
        yaxis_title="tokens",
        height=380,
        margin=_MARGIN,
    )
    return fig


def sentence_norms_figure(
    tokens: tuple[str, ...], token_norms: np.ndarray, position_norms: np.ndarray
) -> go.Figure:
    """Per token of the sentence: |scale * embedding| and |position vector| as grouped bars."""
    x = list(range(len(tokens)))
    fig = go.Figure(
        [
            go.Bar(x=x, y=token_norms, name="token: |scale · embedding|"),
            go.Bar(x=x, y=position_norms, name="position vector"),
        ]
    )
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=labels(tokens), tickangle=-60)
    fig.update_layout(
        title="Norms per token of the sentence",
        yaxis_title="L2 norm",
        height=380,
        margin=_MARGIN,
    )
    return fig
