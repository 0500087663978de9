"""The "head view" of bertviz in plotly: queries on the left, keys on the right, one line per
weight, one colour per head."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.colors import hex_to_rgb, qualitative

from viz_transformer.figures.common import DASHES
from viz_transformer.figures.heatmap import axes, check_layer, require, with_subtitle
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.trace import Trace

HEAD_VIEW_MIN = 0.02  # lighter lines are invisible anyway and would only grow the payload
HEAD_VIEW_TOKENS = 300  # more lines than anyone can follow
HEAD_COLOURS = qualitative.Dark24


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


def _lines(head: int, groups: dict[float, tuple[list, list, list]]) -> list[go.Scatter]:
    """One head's segment groups as line traces, faint first, in one legend entry; each head
    has its dash as well as its colour (heads told apart without colour)."""
    r, g, b = hex_to_rgb(HEAD_COLOURS[head % len(HEAD_COLOURS)])
    return [
        go.Scatter(
            x=xs,
            y=ys,
            text=texts,
            mode="lines",
            name=f"head {head}",
            legendgroup=f"head {head}",
            showlegend=n == len(groups) - 1,
            line={
                "color": f"rgba({r},{g},{b},{level:.1f})",
                "width": 2,
                "dash": DASHES[head % len(DASHES)],
            },
            hovertemplate=f"%{{text}}<extra>head {head}</extra>",
        )
        for n, (level, (xs, ys, texts)) in enumerate(sorted(groups.items()))
    ]


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

    Args:
        trace: the record; kind: which ``[layers, heads, q, k]`` map; layer: counted from 0.
        heads: the heads drawn, at least one.

    Raises:
        ValueError: no heads, a head or layer that does not exist, or a kind the trace lacks.
    """
    arr = require(trace, kind)
    if not heads:
        raise ValueError("Choose at least one head.")
    for head in heads:
        check_layer(arr, kind, layer, head)
    rows, cols, ri, ci, _, note = axes(trace, kind, hide_special)
    fig = go.Figure()
    for x, tokens, side in ((0.0, rows, "middle left"), (1.0, cols, "middle right")):
        fig.add_trace(
            go.Scatter(
                x=[x] * len(tokens),
                y=[-i for i in range(len(tokens))],
                mode="text",
                text=tokens,
                textposition=side,
                hoverinfo="skip",
                showlegend=False,
            )
        )
    drawn = {}
    for head in heads:
        drawn[head] = arr[layer, head][np.ix_(ri, ci)]
        fig.add_traces(_lines(head, _segments(drawn[head], rows, cols, min_weight)))
    subtitle = "; ".join(filter(None, [f"weights below {min_weight} not drawn", note]))
    fig.update_xaxes(visible=False, range=[-0.8, 1.8])
    fig.update_yaxes(visible=False, range=[-max(len(rows), len(cols)) + 0.5, 0.8])
    fig.update_layout(
        title=with_subtitle(
            f"{KIND_TITLES[kind]}, layer {layer}: queries (left) to keys (right)", subtitle
        ),
        height=max(320, 26 * max(len(rows), len(cols)) + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor="white",
        legend={"title": {"text": "head"}},
        meta=_in_words(drawn, rows, cols, min_weight),
    )
    return fig


def _in_words(
    drawn: dict[int, np.ndarray], rows: list[str], cols: list[str], min_weight: float
) -> dict:
    """What the lines say, for ``figures.describe``: each head's strongest line, and every line
    drawn as a table (head, query, key, weight)."""
    plain = [html.unescape(t) for t in rows], [html.unescape(t) for t in cols]
    said, table = [], []
    for head, w in drawn.items():
        i, j = np.unravel_index(np.argmax(w), w.shape)
        said.append(f"head {head}: ‘{plain[0][i]}’ to ‘{plain[1][j]}’ ({w[i, j]:.3f})")
        table += [
            [head, plain[0][q], plain[1][k], round(float(w[q, k]), 4)]
            for q, k in zip(*np.nonzero(w >= min_weight), strict=True)
        ]
    words = (
        f"Lines from each query token (left) to each key token (right), darker for more weight, "
        f"one colour and dash per head; the strongest line of {'; '.join(said)}."
    )
    return {
        "description": words,
        "values": {"columns": ["head", "query", "key", "weight"], "rows": table},
    }
