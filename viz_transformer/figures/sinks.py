"""Attention sinks drawn: the layers x heads map of each head's mass on the first token, and one
head's map with that first key hidden and its rows renormalised (``analysis.sinks``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_transformer.analysis.sinks import RENORMALISED, hide_first_key
from viz_transformer.figures.common import COLORSCALE, labels
from viz_transformer.figures.heatmap import heatmap, require, with_subtitle
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.trace import Trace


def sink_map_figure(
    mass: np.ndarray,
    kind: AttentionKind,
    first_token: str,
    kv_of: Sequence[int] | None = None,
) -> go.Figure:
    """Layers x heads, each cell the head's mean weight on the first token.

    Args:
        mass: ``[layers, heads]`` from ``analysis.sinks.sink_mass``.
        first_token: the first key's label, for the title.
        kv_of: per query head its K/V head (``LoadedModel.kv_groups``); labels the columns
            when heads share K/V heads (grouped-query attention).
    """
    n_layers, n_heads = mass.shape
    ticks = [f"head {h}" for h in range(n_heads)]
    if kv_of is not None and len(set(kv_of)) < n_heads:
        ticks = [f"{t}<br>K/V {g}" for t, g in zip(ticks, kv_of, strict=True)]
    fig = go.Figure(
        go.Heatmap(
            z=mass,
            zmin=0.0,
            zmax=1.0,
            colorscale=COLORSCALE,
            colorbar={"title": {"text": "mass"}},
            hovertemplate="layer %{y}, head %{x}<br>mean weight on the first token %{z:.3f}"
            "<extra></extra>",
        )
    )
    fig.update_xaxes(tickmode="array", tickvals=list(range(n_heads)), ticktext=ticks)
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(n_layers)),
        ticktext=[f"layer {layer}" for layer in range(n_layers)],
        autorange="reversed",
    )
    token = labels([first_token])[0]
    title = f"{KIND_TITLES[kind]}: mean weight on the first token ({token}) per head"
    sub = "skipping the first query, which sees only that token" if kind == "decoder" else ""
    fig.update_layout(
        title=with_subtitle(title, sub),
        height=int(min(900, max(300, 120 + 24 * n_layers))),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def without_first_figure(trace: Trace, kind: AttentionKind, layer: int, head: int) -> go.Figure:
    """One head's map with the first key column hidden, rows renormalised (labelled so); cells
    the causal mask forbids, and rows with nothing left, show grey."""
    arr = require(trace, kind)
    z = hide_first_key(np.asarray(arr[layer, head]))
    if kind == "decoder":  # key j + 1 is hidden from query i when j + 1 > i
        q, k = z.shape
        z = np.where(np.arange(k)[None, :] + 1 <= np.arange(q)[:, None], z, np.nan)
    rows, cols = trace.map_labels(kind)
    title = with_subtitle(f"Layer {layer}, head {head}", RENORMALISED)
    return heatmap(z, labels(rows), labels(cols[1:]), title, "query (attending)")
