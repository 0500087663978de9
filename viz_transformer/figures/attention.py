"""Attention maps from ``Trace`` records: one head large, and every layer x head as one figure.

Token labels are HTML-escaped (plotly reads ``<s>`` as markup) and axes are numeric with
``ticktext``, because categorical axes would merge repeated tokens into one row.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_transformer.figures.common import COLORSCALE, labels
from viz_transformer.record import AttentionKind, Trace

KIND_TITLES: dict[str, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder masked self-attention",
    "cross": "Encoder-decoder (cross) attention",
}


def _masked(arr: np.ndarray, kind: AttentionKind) -> np.ndarray:
    """Blank (NaN) the cells the causal mask forbids so the triangle is visible, not just 0."""
    if kind != "decoder":
        return arr
    keep = np.tril(np.ones(arr.shape[-2:], dtype=bool))
    return np.where(keep, arr, np.nan)


def _require(trace: Trace, kind: AttentionKind) -> np.ndarray:
    arr = trace.get(kind)
    if arr is None:
        reason = trace.notes.get(kind, f"{trace.model_name} has no {KIND_TITLES[kind].lower()}.")
        raise ValueError(reason)
    return arr


def head_figure(trace: Trace, kind: AttentionKind, layer: int, head: int) -> go.Figure:
    """One head's pattern ``[q, k]`` with token labels and hover values (Eq. 1's softmax)."""
    arr = _require(trace, kind)
    n_layers, n_heads = arr.shape[:2]
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(
            f"layer {layer}, head {head} does not exist: {kind} has {n_layers} layers and "
            f"{n_heads} heads (counted from 0)."
        )
    rows, cols = (labels(t) for t in trace.tokens_for(kind))
    ylabel = "query (attending)"
    if kind == "cross" and trace.pred_tokens:
        # a cross-attention row gathers the source for the word it predicts: label it so
        rows, ylabel = labels(trace.pred_tokens), "output token being predicted (query)"
    z = _masked(arr[layer, head], kind)
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
        title=f"{KIND_TITLES[kind]}, layer {layer}, head {head}",
        xaxis_title="key (attended to)",
        yaxis_title=ylabel,
        height=max(360, 28 * len(rows) + 160),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="#d9d9d9",  # masked (NaN) cells show grey, not as weight 0
    )
    return fig


def overview_figure(trace: Trace, kind: AttentionKind) -> go.Figure:
    """All layers x heads as one tiled heatmap (rows = layers, columns = heads), NaN gaps between.

    One trace draws ~4x faster than dozens of subplots in the browser.
    """
    arr = _require(trace, kind)
    n_layers, n_heads, q, k = arr.shape
    gap = max(1, round(0.15 * max(q, k)))
    tiled = np.full((n_layers * (q + gap) - gap, n_heads * (k + gap) - gap), np.nan, np.float32)
    layer_of = np.full(tiled.shape, -1, dtype=np.int16)
    head_of = np.full(tiled.shape, -1, dtype=np.int16)
    for layer in range(n_layers):
        for head in range(n_heads):
            r, c = layer * (q + gap), head * (k + gap)
            tiled[r : r + q, c : c + k] = _masked(arr[layer, head], kind)
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
        title=f"{KIND_TITLES[kind]}: {n_layers} layers x {n_heads} heads",
        height=int(min(1200, max(260, 90 + n_layers * tile_height))),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="white",
    )
    return fig
