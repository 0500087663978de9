"""What attention heatmaps share: the map as drawn (kept tokens, causal blanks, block maxima),
its axis labels, and the plotly heatmaps at full resolution and downsampled.

Token labels are HTML-escaped (plotly reads ``<s>`` as markup) and axes are numeric with
``ticktext``, because categorical axes would merge repeated tokens into one row.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go

from viz_transformer.analysis.aggregate import kept_positions
from viz_transformer.figures.common import COLORSCALE, labels
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.lazy import drawn
from viz_transformer.records.trace import Patterns, Trace

HIDDEN_NOTE = "special tokens hidden: rows no longer sum to 1 (not renormalised)"
MASKED_GREY = "#d9d9d9"  # masked (NaN) cells show grey, not as weight 0
MAX_HEIGHT = 900  # pixels: a 200-token map would otherwise be 5,760 px tall
LABEL_PX = 14  # pixels a tick label needs; fewer per row and only every n-th is labelled
# most bytes of hover text a map sends, naming both tokens in every cell (a 256-token map's were
# 1.2 MB of a 1.7 MB update); past it the hover gives positions and the axes the tokens
HOVER_TEXT_BYTES = 400_000


def shown(
    z: np.ndarray, kind: AttentionKind, ri: np.ndarray, ci: np.ndarray, limit: int | None = None
) -> tuple[np.ndarray, int, int]:
    """A ``[q, k]`` map (one head, or an aggregate) as drawn: ``head_shown`` of ``z``."""
    return head_shown(z[None, None], kind, 0, 0, ri, ci, limit)


def head_shown(
    arr: Patterns,
    kind: AttentionKind,
    layer: int,
    head: int,
    ri: np.ndarray,
    ci: np.ndarray,
    limit: int | None = None,
) -> tuple[np.ndarray, int, int]:
    """One head's map as drawn: the kept rows ``ri`` and columns ``ci`` (positions in the full
    map), cells the causal mask forbids blank (NaN), so the triangle shows rather than 0; block
    maxima when a side is longer than ``limit`` (a block is blank only when all of it is). A
    long input's head is computed where the model runs; only these cells reach the host.

    Args:
        arr: ``[layers, heads, q, k]`` weights (lazy for long inputs).

    Returns:
        the map and its block height and width (1, 1 at full resolution).
    """
    z, bq, bk = drawn(arr, layer, head, ri, ci, limit, "max")
    if kind != "decoder":
        return z, bq, bk
    last_q = ri[np.minimum(np.arange(1, z.shape[0] + 1) * bq, len(ri)) - 1]
    first_k = ci[np.arange(z.shape[1]) * bk]
    return np.where(first_k[None, :] <= last_q[:, None], z, np.nan), bq, bk


def require(trace: Trace, kind: AttentionKind) -> np.ndarray:
    """The ``[layers, heads, q, k]`` weights of ``kind``.

    Raises:
        ValueError: the trace has none; the message is the model's note on why.
    """
    arr = trace.get(kind)
    if arr is None:
        reason = trace.notes.get(kind, f"{trace.model_name} has no {KIND_TITLES[kind].lower()}.")
        raise ValueError(reason)
    return arr


def check_layer(arr: np.ndarray, kind: AttentionKind, layer: int, head: int = 0) -> None:
    """Raise a ``ValueError`` naming the sizes when ``layer`` or ``head`` lies outside ``arr``."""
    n_layers, n_heads = arr.shape[:2]
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(
            f"layer {layer}, head {head} does not exist: {kind} has {n_layers} layers and "
            f"{n_heads} heads (counted from 0)."
        )


def axes(
    trace: Trace, kind: AttentionKind, hide_special: bool
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, str, str]:
    """Labels of the rows and columns shown, their indices in the full map, the y-axis title,
    and a subtitle when special tokens were hidden (empty otherwise)."""
    rows, cols = trace.map_labels(kind)  # a cross-attention row: the word predicted there
    predicted = kind == "cross" and bool(trace.pred_tokens)
    ylabel = "output token being predicted (query)" if predicted else "query (attending)"
    row_idx, col_idx = kept_positions(rows, hide_special), kept_positions(cols, hide_special)
    note = ""
    if len(col_idx) < len(cols):
        note = HIDDEN_NOTE
    elif len(row_idx) < len(rows):
        note = "special-token rows hidden"
    row_labels, col_labels = labels(rows), labels(cols)
    return (
        [row_labels[i] for i in row_idx],
        [col_labels[i] for i in col_idx],
        row_idx,
        col_idx,
        ylabel,
        note,
    )


def with_subtitle(title: str, subtitle: str) -> str:
    """A plotly title with ``subtitle`` in small type below it (when there is one)."""
    return f"{title}<br><sup>{subtitle}</sup>" if subtitle else title


def reduced_note(n_q: int, n_k: int, limit: int) -> str:
    """The subtitle of an ``n_q x n_k`` map drawn as block maxima at most ``limit`` per side."""
    bq, bk = -(-n_q // limit), -(-n_k // limit)
    return f"{n_q} x {n_k} tokens: each cell is the max of a {bq} x {bk} block"


def weight_trace(z: np.ndarray, hovertemplate: str, **extra: object) -> go.Heatmap:
    """A heatmap of attention weights on the fixed 0-1 scale every map shares, so colours compare
    across heads, layers and pages; ``extra`` goes to ``go.Heatmap`` (text, customdata, ...)."""
    if extra.get("showscale", True):
        extra["colorbar"] = {"title": {"text": "weight"}}
    return go.Heatmap(
        z=z, zmin=0.0, zmax=1.0, colorscale=COLORSCALE, hovertemplate=hovertemplate, **extra
    )


def label_axes(
    fig: go.Figure, rows: list[str], cols: list[str], every: tuple[int, int] = (1, 1)
) -> None:
    """Numeric axes labelled with ``rows`` (top to bottom) and ``cols`` (left to right), every
    ``every[0]``-th row and ``every[1]``-th column labelled (hover names them all)."""
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(0, len(cols), every[1])),
        ticktext=cols[:: every[1]],
        tickangle=-60,
        range=[-0.5, len(cols) - 0.5],
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(0, len(rows), every[0])),
        ticktext=rows[:: every[0]],
        range=[len(rows) - 0.5, -0.5],  # first token on top
    )


def _hover_bytes(rows: list[str], cols: list[str]) -> int:
    """About what ``"row → col"`` in every cell adds to the figure's JSON (escaped as written)."""
    size = lambda labels: sum(len(json.dumps(t)) for t in labels)  # noqa: E731
    return size(rows) * len(cols) + size(cols) * len(rows) + 10 * len(rows) * len(cols)


def heatmap(z: np.ndarray, rows: list[str], cols: list[str], title: str, ylabel: str) -> go.Figure:
    """One ``[q, k]`` map with token labels; NaN cells (masked) show grey.

    A long map keeps a readable aspect: at most ``MAX_HEIGHT`` pixels tall (zoom with the mouse,
    as in plotly), with every n-th token labelled so labels never overlap (hover names both
    tokens up to ``HOVER_TEXT_BYTES`` of text, positions beyond).
    """
    if _hover_bytes(rows, cols) <= HOVER_TEXT_BYTES:
        text = [[f"{r} → {c}" for c in cols] for r in rows]
        hover = "%{text}<br>query %{y}, key %{x}<br>weight %{z:.3f}<extra></extra>"
        fig = go.Figure(weight_trace(z, hover, text=text))
    else:  # the axes name the tokens: a label per cell was most of a 1.7 MB update
        fig = go.Figure(weight_trace(z, "query %{y}, key %{x}<br>weight %{z:.3f}<extra></extra>"))
    height = min(MAX_HEIGHT, max(360, 28 * len(rows) + 160))
    every = (-(-len(rows) * LABEL_PX // (height - 160)), -(-len(cols) * LABEL_PX // 900))
    label_axes(fig, rows, cols, every)
    if every != (1, 1):
        title = with_subtitle(title, f"1 token label in {max(every)} shown: zoom in for all")
    fig.update_layout(
        title=title,
        xaxis_title="key (attended to)",
        yaxis_title=ylabel,
        height=height,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor=MASKED_GREY,
    )
    return fig


def block_heatmap(
    small: np.ndarray,
    by: int,
    bx: int,
    value: str,
    rows: str = "queries",
    cols: str = "keys",
    **style: object,
) -> go.Heatmap:
    """A map reduced to blocks of ``by x bx`` cells (``small[i, j]`` stands for rows
    ``i * by`` to ``(i + 1) * by - 1`` and likewise columns), each drawn over the positions it
    stands for, so the axes count positions of the full map; the hover names the block and
    ``value`` (what a block's number is: "max weight", "largest score"). ``style``: the
    heatmap's other properties (``zmin``, ``colorscale``, ...)."""
    where = f"{rows} near %{{y:.0f}} (block of {by}), {cols} near %{{x:.0f}} (block of {bx})"
    named = f"{value} " if value else ""
    return go.Heatmap(
        z=small,
        x0=(bx - 1) / 2,
        dx=bx,
        y0=(by - 1) / 2,
        dy=by,
        hovertemplate=f"{where}<br>{named}%{{z:.3f}}<extra></extra>",
        **style,
    )


def downsampled(
    small: np.ndarray, bq: int, bk: int, shape: tuple[int, int], title: str, ylabel: str
) -> go.Figure:
    """A long map as ``bq x bk`` block maxima on axes counted in token positions.

    Args:
        small: the block maxima from ``shown``; shape: ``(q, k)`` of the full map.
    """
    fig = go.Figure(
        block_heatmap(
            small,
            bq,
            bk,
            "max weight",
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALE,
            colorbar={"title": {"text": "block max"}},
        )
    )
    fig.update_xaxes(title="key position (attended to)", range=[0, shape[1]])
    fig.update_yaxes(title=f"{ylabel}, position", range=[shape[0], 0])
    fig.update_layout(
        title=title,
        height=760,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor=MASKED_GREY,
    )
    return fig
