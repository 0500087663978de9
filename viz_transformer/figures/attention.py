"""Attention maps from ``Trace`` records: one head large, and every layer x head as one figure.

Token labels are HTML-escaped (plotly reads ``<s>`` as markup) and axes are numeric with
``ticktext``, because categorical axes would merge repeated tokens into one row.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import plotly.graph_objects as go
from plotly.colors import hex_to_rgb, qualitative

from viz_transformer.analysis.aggregate import head_max, head_mean, kept_positions, rollout
from viz_transformer.figures.common import COLORSCALE, labels
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.lazy import block_reduce
from viz_transformer.records.trace import Trace

HIDDEN_NOTE = "special tokens hidden: rows no longer sum to 1 (not renormalised)"
HEAD_MAX = 256  # a head map larger than this per side is drawn as block maxima (or a window)
OVERVIEW_MAX = 128  # per head in the overview (a tile is ~70-140 px wide on screen)
HEAD_VIEW_MIN = 0.02  # lighter lines are invisible anyway and would only grow the payload
HEAD_VIEW_TOKENS = 300  # more lines than anyone can follow
HEAD_COLOURS = qualitative.Dark24


def _shown(
    z: np.ndarray, kind: AttentionKind, ri: np.ndarray, ci: np.ndarray, limit: int | None = None
) -> tuple[np.ndarray, int, int]:
    """One head's map as drawn: the kept rows ``ri`` and columns ``ci`` (positions in the full
    map), cells the causal mask forbids blank (NaN), so the triangle shows rather than 0; block
    maxima when a side is longer than ``limit`` (a block is blank only when all of it is).

    Returns:
        the map and its block height and width (1, 1 at full resolution).
    """
    if len(ri) != z.shape[0] or len(ci) != z.shape[1]:
        z = z[np.ix_(ri, ci)]
    bq = bk = 1
    if limit is not None and max(z.shape) > limit:
        z, bq, bk = block_reduce(z, limit, "max")
    if kind != "decoder":
        return z, bq, bk
    last_q = ri[np.minimum(np.arange(1, z.shape[0] + 1) * bq, len(ri)) - 1]
    first_k = ci[np.arange(z.shape[1]) * bk]
    return np.where(first_k[None, :] <= last_q[:, None], z, np.nan), bq, bk


def _require(trace: Trace, kind: AttentionKind) -> np.ndarray:
    arr = trace.get(kind)
    if arr is None:
        reason = trace.notes.get(kind, f"{trace.model_name} has no {KIND_TITLES[kind].lower()}.")
        raise ValueError(reason)
    return arr


def _check_layer(arr: np.ndarray, kind: AttentionKind, layer: int, head: int = 0) -> None:
    n_layers, n_heads = arr.shape[:2]
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(
            f"layer {layer}, head {head} does not exist: {kind} has {n_layers} layers and "
            f"{n_heads} heads (counted from 0)."
        )


def _axes(
    trace: Trace, kind: AttentionKind, hide_special: bool
) -> tuple[list[str], list[str], np.ndarray, np.ndarray, str, str]:
    """Labels of the rows and columns shown, their indices in the full map, the y-axis title,
    and a subtitle when special tokens were hidden (empty otherwise)."""
    rows, cols = trace.tokens_for(kind)
    ylabel = "query (attending)"
    if kind == "cross" and trace.pred_tokens:
        # a cross-attention row gathers the source for the word it predicts: label it so
        rows, ylabel = trace.pred_tokens, "output token being predicted (query)"
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


def _title(title: str, subtitle: str) -> str:
    return f"{title}<br><sup>{subtitle}</sup>" if subtitle else title


def _heatmap(z: np.ndarray, rows: list[str], cols: list[str], title: str, ylabel: str) -> go.Figure:
    """One ``[q, k]`` map with token labels; NaN cells (masked) show grey."""
    text = [[f"{r} → {c}" for c in cols] for r in rows]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALE,
            hovertemplate="%{text}<br>query %{y}, key %{x}<br>weight %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "weight"}},
        )
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(cols))),
        ticktext=cols,
        tickangle=-60,
        range=[-0.5, len(cols) - 0.5],
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(rows))),
        ticktext=rows,
        range=[len(rows) - 0.5, -0.5],  # first token on top
    )
    fig.update_layout(
        title=title,
        xaxis_title="key (attended to)",
        yaxis_title=ylabel,
        height=max(360, 28 * len(rows) + 160),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor="#d9d9d9",  # masked (NaN) cells show grey, not as weight 0
    )
    return fig


def is_large(trace: Trace, kind: AttentionKind) -> bool:
    """True when a head of ``kind`` has more than ``HEAD_MAX`` rows or columns: its map is then
    drawn downsampled, with a full-resolution window (``head_figure``'s ``window``)."""
    return max(_require(trace, kind).shape[2:]) > HEAD_MAX


def head_figure(
    trace: Trace,
    kind: AttentionKind,
    layer: int,
    head: int,
    hide_special: bool = False,
    window: tuple[int, int, int] | None = None,
) -> go.Figure:
    """One head's pattern ``[q, k]`` with token labels and hover values (Eq. 1's softmax).

    With ``hide_special`` the rows and columns of special tokens are dropped, not renormalised.
    A map larger than ``HEAD_MAX`` per side is drawn as block maxima (every weight is in some
    block, so no strong weight disappears); ``window=(first query, first key, size)`` shows that
    part at full resolution with its token labels instead.
    """
    arr = _require(trace, kind)
    _check_layer(arr, kind, layer, head)
    rows, cols, ri, ci, ylabel, note = _axes(trace, kind, hide_special)
    title = f"{KIND_TITLES[kind]}, layer {layer}, head {head}"
    if window is not None:
        q0, k0, size = _clamp_window(window, (len(ri), len(ci)))
        rs, cs = slice(q0, q0 + size), slice(k0, k0 + size)
        z = _shown(arr[layer, head], kind, ri[rs], ci[cs])[0]
        shown = f"queries {q0}-{q0 + z.shape[0] - 1}, keys {k0}-{k0 + z.shape[1] - 1}"
        note = "; ".join(filter(None, [f"{shown} of {len(ri)} x {len(ci)}", note]))
        return _heatmap(z, rows[rs], cols[cs], _title(title, note), ylabel)
    z, bq, bk = _shown(arr[layer, head], kind, ri, ci, HEAD_MAX)
    if bq == bk == 1:
        return _heatmap(z, rows, cols, _title(title, note), ylabel)
    note = "; ".join(filter(None, [_reduced(len(ri), len(ci), HEAD_MAX), note]))
    return _downsampled(z, bq, bk, (len(ri), len(ci)), _title(title, note), ylabel)


def _clamp_window(window: tuple[int, int, int], shape: tuple[int, ...]) -> tuple[int, int, int]:
    q0, k0, size = (int(v) for v in window)
    size = max(1, min(size, HEAD_MAX))
    return max(0, min(q0, shape[0] - 1)), max(0, min(k0, shape[1] - 1)), size


def _reduced(n_q: int, n_k: int, limit: int) -> str:
    bq, bk = -(-n_q // limit), -(-n_k // limit)
    return f"{n_q} x {n_k} tokens: each cell is the max of a {bq} x {bk} block"


def _downsampled(
    small: np.ndarray, bq: int, bk: int, shape: tuple[int, int], title: str, ylabel: str
) -> go.Figure:
    """A long map as ``bq x bk`` block maxima on axes counted in token positions."""
    fig = go.Figure(
        go.Heatmap(
            z=small,
            x0=(bk - 1) / 2,
            dx=bk,
            y0=(bq - 1) / 2,
            dy=bq,
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALE,
            hovertemplate=f"queries near %{{y:.0f}} (block of {bq}), keys near %{{x:.0f}} "
            f"(block of {bk})<br>max weight %{{z:.3f}}<extra></extra>",
            colorbar={"title": {"text": "block max"}},
        )
    )
    fig.update_xaxes(title="key position (attended to)", range=[0, shape[1]])
    fig.update_yaxes(title=f"{ylabel}, position", range=[shape[0], 0])
    fig.update_layout(
        title=title,
        height=760,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor="#d9d9d9",
    )
    return fig


def aggregate_figure(
    trace: Trace,
    kind: AttentionKind,
    which: Literal["mean", "max", "rollout"],
    layer: int,
    hide_special: bool = False,
) -> go.Figure:
    """Head mean or max of ``layer``, or the attention rollout through layers 0..``layer``.

    Raises:
        ValueError: rollout of cross-attention (see ``aggregate.rollout``), or a bad layer.
    """
    arr = _require(trace, kind)
    _check_layer(arr, kind, layer)
    rows, cols, ri, ci, ylabel, note = _axes(trace, kind, hide_special)
    if which == "rollout":
        z, title = rollout(arr)[layer], f"Attention rollout through layers 0-{layer}"
    elif which == "max":
        z, title = head_max(arr)[layer], f"Head max, layer {layer}"
        note = "; ".join(filter(None, ["rows do not sum to 1 (a max, not a mix)", note]))
    else:
        z, title = head_mean(arr)[layer], f"Head mean, layer {layer}"
    z = _shown(z, kind, ri, ci)[0]
    return _heatmap(z, rows, cols, _title(f"{KIND_TITLES[kind]}: {title}", note), ylabel)


def overview_figure(trace: Trace, kind: AttentionKind, hide_special: bool = False) -> go.Figure:
    """All layers x heads as one tiled heatmap (rows = layers, columns = heads), NaN gaps between.

    One trace draws ~4x faster than dozens of subplots in the browser.
    """
    _, _, ri, ci, _, note = _axes(trace, kind, hide_special)
    arr = _require(trace, kind)
    n_layers, n_heads = arr.shape[:2]
    tiles = [  # one head at a time: a long input is never whole
        [_shown(arr[layer, head], kind, ri, ci, OVERVIEW_MAX)[0] for head in range(n_heads)]
        for layer in range(n_layers)
    ]
    q, k = tiles[0][0].shape
    if (q, k) != (len(ri), len(ci)):
        note = "; ".join(filter(None, [_reduced(len(ri), len(ci), OVERVIEW_MAX), note]))
    gap = max(1, round(0.15 * max(q, k)))
    tiled = np.full((n_layers * (q + gap) - gap, n_heads * (k + gap) - gap), np.nan, np.float32)
    small = np.int8 if max(n_layers, n_heads) < 128 else np.int16  # hover data: half the bytes
    # gaps hold 0, not -1: "/" runs in the base64 would be written escaped (\u002f), 1.5x the bytes
    layer_of = np.zeros(tiled.shape, dtype=small)
    head_of = np.zeros(tiled.shape, dtype=small)
    for layer in range(n_layers):
        for head in range(n_heads):
            r, c = layer * (q + gap), head * (k + gap)
            tiled[r : r + q, c : c + k] = tiles[layer][head]
            layer_of[r : r + q, c : c + k] = layer
            head_of[r : r + q, c : c + k] = head
    fig = go.Figure(
        go.Heatmap(
            z=tiled,
            customdata=np.stack([layer_of, head_of], axis=-1),
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALE,
            showscale=False,
            hoverongaps=False,
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}"
            "<br>weight %{z:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(
        tickmode="array",
        tickvals=[h * (k + gap) + (k - 1) / 2 for h in range(n_heads)],
        ticktext=[f"head {h}" for h in range(n_heads)],
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=[layer * (q + gap) + (q - 1) / 2 for layer in range(n_layers)],
        ticktext=[f"layer {layer}" for layer in range(n_layers)],
        autorange="reversed",
        showgrid=False,
        zeroline=False,
    )
    # about square tiles in a ~860 px wide column, without the blank band scaleanchor leaves
    tile_height = 860 / n_heads * q / k
    fig.update_layout(
        title=_title(f"{KIND_TITLES[kind]}: {n_layers} layers x {n_heads} heads", note),
        height=int(min(1200, max(260, 90 + n_layers * tile_height))),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="white",
    )
    return fig


def _segments(
    w: np.ndarray, rows: list[str], cols: list[str], min_weight: float
) -> dict[float, tuple[list, list, list]]:
    """Query-to-key line segments (x, y, hover text) grouped by opacity level 0.1..1.0.

    Plotly gives one line colour per trace, so a head's lines are grouped by their weight
    rounded up to a tenth; each segment has a midpoint that hovers with the exact weight.
    """
    groups: dict[float, tuple[list, list, list]] = {}
    for i, j in zip(*np.nonzero(w >= min_weight), strict=True):
        xs, ys, texts = groups.setdefault(float(np.ceil(w[i, j] * 10) / 10), ([], [], []))
        label = f"{rows[i]} → {cols[j]}: {w[i, j]:.3f}"
        xs += [0.0, 0.5, 1.0, None]
        ys += [-i, -(i + j) / 2, -j, None]
        texts += [label, label, label, ""]
    return groups


def head_view_figure(
    trace: Trace,
    kind: AttentionKind,
    layer: int,
    heads: list[int],
    hide_special: bool = False,
    min_weight: float = HEAD_VIEW_MIN,
) -> go.Figure:
    """The "head view" of bertviz: queries on the left, keys on the right, one line per weight.

    A line's opacity is its weight (in tenths), one colour per head; weights below
    ``min_weight`` are not drawn. Each head's traces share the legend group ``head <h>``.
    """
    arr = _require(trace, kind)
    if not heads:
        raise ValueError("Choose at least one head.")
    for head in heads:
        _check_layer(arr, kind, layer, head)
    rows, cols, ri, ci, _, note = _axes(trace, kind, hide_special)
    fig = go.Figure()
    for x, tokens, side in ((0.0, rows, "middle left"), (1.0, cols, "middle right")):
        fig.add_trace(
            go.Scatter(x=[x] * len(tokens), y=[-i for i in range(len(tokens))], mode="text",
                       text=tokens, textposition=side, hoverinfo="skip", showlegend=False)
        )  # fmt: skip
    for head in heads:
        r, g, b = hex_to_rgb(HEAD_COLOURS[head % len(HEAD_COLOURS)])
        w = arr[layer, head][np.ix_(ri, ci)]
        groups = sorted(_segments(w, rows, cols, min_weight).items())  # faint lines first
        for n, (level, (xs, ys, texts)) in enumerate(groups):
            fig.add_trace(
                go.Scatter(
                    x=xs, y=ys, text=texts, mode="lines", name=f"head {head}",
                    legendgroup=f"head {head}", showlegend=n == len(groups) - 1,
                    line={"color": f"rgba({r},{g},{b},{level:.1f})", "width": 2},
                    hovertemplate=f"%{{text}}<extra>head {head}</extra>",
                )
            )  # fmt: skip
    subtitle = "; ".join(filter(None, [f"weights below {min_weight} not drawn", note]))
    fig.update_xaxes(visible=False, range=[-0.8, 1.8])
    fig.update_yaxes(visible=False, range=[-max(len(rows), len(cols)) + 0.5, 0.8])
    fig.update_layout(
        title=_title(
            f"{KIND_TITLES[kind]}, layer {layer}: queries (left) to keys (right)", subtitle
        ),
        height=max(320, 26 * max(len(rows), len(cols)) + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor="white",
        legend={"title": {"text": "head"}},
    )
    return fig
