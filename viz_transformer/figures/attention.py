"""Attention maps from ``Trace`` records: one head large, a head aggregate, and every layer x
head as one figure. The shared heatmap helpers live in ``heatmap``; the bertviz-style head view in
``head_view`` (re-exported here for the pages).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Literal

import numpy as np
import plotly.graph_objects as go

from viz_transformer.analysis.aggregate import head_max, head_mean, rollout
from viz_transformer.figures.head_view import HEAD_VIEW_TOKENS, head_view_figure
from viz_transformer.figures.heatmap import (
    axes,
    check_layer,
    downsampled,
    head_shown,
    heatmap,
    reduced_note,
    require,
    shown,
    weight_trace,
    with_subtitle,
)
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.trace import Trace

__all__ = [
    "HEAD_MAX",
    "HEAD_VIEW_TOKENS",
    "KIND_TITLES",
    "OVERVIEW_MAX",
    "WINDOW_MAX",
    "aggregate_figure",
    "head_figure",
    "head_view_figure",
    "is_large",
    "overview_figure",
]

HEAD_MAX = 256  # a head map larger than this per side is drawn as block maxima (or a window)
WINDOW_MAX = 1024  # the largest full-resolution window into a long map (issue 46)
OVERVIEW_MAX = 128  # per head in the overview (a tile is ~70-140 px wide on screen)
OVERVIEW_TOP = 3  # heads the overview's description names


def is_large(trace: Trace, kind: AttentionKind) -> bool:
    """True when a head of ``kind`` has more than ``HEAD_MAX`` rows or columns: its map is then
    drawn downsampled, with a full-resolution window (``head_figure``'s ``window``)."""
    return max(require(trace, kind).shape[2:]) > HEAD_MAX


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
    arr = require(trace, kind)
    check_layer(arr, kind, layer, head)
    rows, cols, ri, ci, ylabel, note = axes(trace, kind, hide_special)
    title = f"{KIND_TITLES[kind]}, layer {layer}, head {head}"
    if window is not None:
        q0, k0, size = _clamp_window(window, (len(ri), len(ci)))
        rs, cs = slice(q0, q0 + size), slice(k0, k0 + size)
        z = head_shown(arr, kind, layer, head, ri[rs], ci[cs])[0]
        part = f"queries {q0}-{q0 + z.shape[0] - 1}, keys {k0}-{k0 + z.shape[1] - 1}"
        note = "; ".join(filter(None, [f"{part} of {len(ri)} x {len(ci)}", note]))
        return heatmap(z, rows[rs], cols[cs], with_subtitle(title, note), ylabel)
    z, bq, bk = head_shown(arr, kind, layer, head, ri, ci, HEAD_MAX)
    if bq == bk == 1:
        return heatmap(z, rows, cols, with_subtitle(title, note), ylabel)
    note = "; ".join(filter(None, [reduced_note(len(ri), len(ci), HEAD_MAX), note]))
    return downsampled(z, bq, bk, (len(ri), len(ci)), with_subtitle(title, note), ylabel)


def _clamp_window(window: tuple[int, int, int], shape: tuple[int, ...]) -> tuple[int, int, int]:
    q0, k0, size = (int(v) for v in window)
    size = max(1, min(size, WINDOW_MAX))
    return max(0, min(q0, shape[0] - 1)), max(0, min(k0, shape[1] - 1)), size


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
    arr = require(trace, kind)
    check_layer(arr, kind, layer)
    rows, cols, ri, ci, ylabel, note = axes(trace, kind, hide_special)
    if which == "rollout":
        z, title = rollout(arr)[layer], f"Attention rollout through layers 0-{layer}"
    elif which == "max":
        z, title = head_max(arr)[layer], f"Head max, layer {layer}"
        note = "; ".join(filter(None, ["rows do not sum to 1 (a max, not a mix)", note]))
    else:
        z, title = head_mean(arr)[layer], f"Head mean, layer {layer}"
    z = shown(z, kind, ri, ci)[0]
    return heatmap(z, rows, cols, with_subtitle(f"{KIND_TITLES[kind]}: {title}", note), ylabel)


def flow_figure(
    trace: Trace, kind: AttentionKind, flows: np.ndarray, layer: int, hide_special: bool = False
) -> go.Figure:
    """Attention flow through layers 0..``layer`` (``analysis.flow``), drawn as rollout is.

    Args:
        flows: ``[layers, n, n]`` from ``attention_flow``.
    """
    check_layer(require(trace, kind), kind, layer)
    rows, cols, ri, ci, ylabel, note = axes(trace, kind, hide_special)
    z = shown(flows[layer], kind, ri, ci)[0]
    title = f"{KIND_TITLES[kind]}: Attention flow through layers 0-{layer}"
    return heatmap(z, rows, cols, with_subtitle(title, note), ylabel)


def _tile(tiles: list[list[np.ndarray]], gap: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``[layers][heads]`` head maps ``(q, k)`` in one grid with ``gap`` NaN cells between.

    Returns:
        the grid, and per cell its ``(layer, head)`` for the hover text, ``(rows, cols, 2)``.
    """
    n_layers, n_heads = len(tiles), len(tiles[0])
    q, k = tiles[0][0].shape
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
    return tiled, np.stack([layer_of, head_of], axis=-1)


def overview_figure(
    trace: Trace,
    kind: AttentionKind,
    hide_special: bool = False,
    kv_of: Sequence[int] | None = None,
) -> go.Figure:
    """All layers x heads as one tiled heatmap (rows = layers, columns = heads), NaN gaps between.

    One trace draws ~4x faster than dozens of subplots in the browser. With ``kv_of`` (per query
    head its K/V head, ``LoadedModel.kv_groups``) and fewer K/V heads than query heads
    (grouped-query attention), each column names its K/V head and a line separates the groups.
    """
    rows, cols, ri, ci, _, note = axes(trace, kind, hide_special)
    arr = require(trace, kind)
    n_layers, n_heads = arr.shape[:2]
    tiles = [  # one head at a time: a long input is never whole
        [head_shown(arr, kind, layer, head, ri, ci, OVERVIEW_MAX)[0] for head in range(n_heads)]
        for layer in range(n_layers)
    ]
    q, k = tiles[0][0].shape
    if (q, k) != (len(ri), len(ci)):
        note = "; ".join(filter(None, [reduced_note(len(ri), len(ci), OVERVIEW_MAX), note]))
    gap = max(1, round(0.15 * max(q, k)))
    tiled, where = _tile(tiles, gap)
    blocks = (-(-len(ri) // OVERVIEW_MAX), -(-len(ci) // OVERVIEW_MAX))  # as head_shown draws
    hover = "layer %{customdata[0]}, head %{customdata[1]}<br>weight %{z:.3f}<extra></extra>"
    fig = go.Figure(
        weight_trace(tiled, hover, customdata=where, showscale=False, hoverongaps=False)
    )
    ticks = [f"head {h}" for h in range(n_heads)]
    grouped = kv_of is not None and len(set(kv_of)) < n_heads
    if grouped:
        ticks = [f"{t}<br>K/V {g}" for t, g in zip(ticks, kv_of, strict=True)]
        for h in range(1, n_heads):  # a line where the next K/V group starts
            if kv_of[h] != kv_of[h - 1]:
                fig.add_vline(x=h * (k + gap) - (gap + 1) / 2, line={"color": "black", "width": 2})
        groups = f"grouped-query attention: {n_heads} query heads share {len(set(kv_of))} K/V heads"
        note = "; ".join(filter(None, [groups, note]))
    fig.update_xaxes(
        tickmode="array",
        tickvals=[h * (k + gap) + (k - 1) / 2 for h in range(n_heads)],
        ticktext=ticks,
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
        title=with_subtitle(f"{KIND_TITLES[kind]}: {n_layers} layers x {n_heads} heads", note),
        height=int(min(1200, max(260, 90 + n_layers * tile_height))),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="white",
        meta=_overview_words(tiles, _block_labels(rows, blocks[0]), _block_labels(cols, blocks[1])),
    )
    return fig


def _block_labels(tokens: list[str], block: int) -> list[str]:
    """What each drawn row (or column) of a head holds, in words: its token, or for a block of
    ``block`` tokens (a long input drawn reduced) its first and last token."""
    plain = [html.unescape(t) for t in tokens]
    if block == 1:
        return plain
    return [
        f"{plain[i]} … {plain[min(i + block, len(plain)) - 1]}" for i in range(0, len(plain), block)
    ]


def _overview_words(tiles: list[list[np.ndarray]], rows: list[str], cols: list[str]) -> dict:
    """The overview in words for ``figures.describe``, by its heads and tokens (never the cells
    of the tiled grid): the ``OVERVIEW_TOP`` most focused heads (focus: the mean over queries of a
    query's largest weight; 1 when each query looks at one key) with where their strongest queries
    look, and the least focused; its table is one row per head."""
    table = []
    for layer, heads in enumerate(tiles):
        for head, z in enumerate(heads):
            top = np.nanmax(np.where(np.isnan(z), -np.inf, z), axis=1)
            focus = float(np.mean(top[np.isfinite(top)]))
            order = [int(r) for r in np.argsort(-top, kind="stable") if np.isfinite(top[r])]
            looks = [(rows[r], cols[int(np.nanargmax(z[r]))], float(top[r])) for r in order[:2]]
            table.append(
                [layer, head, round(focus, 4), *looks[0][:2], round(looks[0][2], 4), looks]
            )
    ranked = sorted(table, key=lambda row: -row[2])
    said = [
        f"layer {layer}, head {head} (focus {focus:.2f}): "
        + ", ".join(f"‘{q}’ attends most to ‘{k}’ ({w:.2f})" for q, k, w in looks)
        for layer, head, focus, *_, looks in ranked[:OVERVIEW_TOP]
    ]
    low = ranked[-1]
    words = (
        f"Every head as a small map ({len(tiles)} layers x {len(tiles[0])} heads; rows: query "
        f"tokens, columns: key tokens). Most focused heads (focus: the mean of each query's "
        f"largest weight): {'; '.join(said)}. Least focused: layer {low[0]}, head {low[1]} "
        f"(focus {low[2]:.2f})."
    )
    columns = ["layer", "head", "focus", "strongest query", "its key", "weight"]
    return {
        "description": words,
        "values": {"columns": columns, "rows": [row[:-1] for row in table]},
    }
