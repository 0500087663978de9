"""The decoder-step panel from ``Step`` records: the newest self-attention and cross-attention rows
of every layer and head, the next-token distribution, the beams, and a teacher-forcing alignment.

Rows are stacked as one heatmap, one row per (layer, head), so a step's whole decoder fits in one
view; labels are HTML-escaped and axes numeric with ``ticktext`` (repeated tokens stay apart).
"""

from __future__ import annotations

import warnings

import numpy as np
import plotly.graph_objects as go

from viz_transformer.analysis.decoding import Alignment, Step
from viz_transformer.figures.common import labels
from viz_transformer.figures.heatmap import label_axes, weight_trace
from viz_transformer.records.kinds import head_label

FUTURE = "·"  # label of a decoder position not generated yet
CHOSEN, OTHER = "#d62728", "#9ecae1"  # bar colours: the appended token, the other candidates
KEYS_MAX = 512  # keys a row draws one by one; a longer row is drawn as block maxima


def _rows_figure(
    rows: np.ndarray,
    cols: list[str],
    title: str,
    xtitle: str,
    masked: bool = False,
    layer: int | None = None,
) -> go.Figure:
    """One heatmap of ``rows`` ``[layers, heads, K]`` as ``layers * heads`` rows over ``K`` keys
    (only ``layer``'s heads when given: a 30-layer model's rows would be thousands of pixels);
    ``masked``: NaN cells are positions the causal mask hides, drawn grey."""
    layers = range(rows.shape[0]) if layer is None else range(layer, layer + 1)
    rows = rows[layers.start : layers.stop]
    n_layers, n_heads, k = rows.shape
    z = rows.reshape(n_layers * n_heads, k)
    names = [head_label((i, head)) for i in layers for head in range(n_heads)]
    if k > KEYS_MAX:  # a long prompt: each cell the max of a block of keys
        fig, xtitle = _long_rows(z, names, xtitle)
    else:
        text = [[f"{name} → {c}" for c in cols] for name in names]
        hover = "%{text}<br>weight %{z:.3f}<extra></extra>"
        fig = go.Figure(weight_trace(z, hover, text=text, hoverongaps=False))
        label_axes(fig, names, cols)
    fig.update_layout(
        title=title,
        xaxis_title=xtitle,
        yaxis_title="layer, head",
        height=max(260, 18 * len(names) + 170),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        plot_bgcolor="#d9d9d9" if masked else "white",  # NaN cells: the future, greyed
    )
    return fig


def _long_rows(z: np.ndarray, names: list[str], xtitle: str) -> tuple[go.Figure, str]:
    """Rows ``[n, K]`` over more than ``KEYS_MAX`` keys as the max of each block of keys (NaN,
    the future, only where a whole block is), on an axis counted in positions; and its x title.
    The browser gets at most ``KEYS_MAX`` cells a row, not a label per key."""
    n, k = z.shape
    size = -(-k // KEYS_MAX)
    padded = np.full((n, -(-k // size) * size), np.nan, np.float32)
    padded[:, :k] = z
    with warnings.catch_warnings():  # an all-future block stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        small = np.nanmax(padded.reshape(n, -1, size), axis=2)
    hover = (
        f"%{{y}}<br>keys near %{{x:.0f}} (block of {size})<br>max weight %{{z:.3f}}<extra></extra>"
    )
    fig = go.Figure(
        weight_trace(small, hover, x0=(size - 1) / 2, dx=size, y=names, hoverongaps=False)
    )
    fig.update_xaxes(range=[-0.5, k - 0.5])
    fig.update_yaxes(autorange="reversed")
    return fig, f"{xtitle}: position (each cell the max of {size} keys)"


def self_rows_figure(step: Step, width: int | None = None, layer: int | None = None) -> go.Figure:
    """The newest decoder position's masked self-attention, every layer and head (section 3.2.3).

    Args:
        step: a ``Step`` with a ``self_row`` ``[layers, heads, T]``.
        width: columns to draw, at least ``T``; the positions after ``T`` are the future the
            mask hides, drawn grey (default: none).
        layer: draw only this layer's heads (default: every layer).
    """
    if step.self_row is None:
        raise ValueError("this step has no self-attention row: the decoder has none.")
    n_layers, n_heads, t = step.self_row.shape
    width = max(t, width or t)
    z = np.full((n_layers, n_heads, width), np.nan, np.float32)
    z[..., :t] = step.self_row
    cols = labels(step.input_tokens) + [FUTURE] * (width - t)
    title = f"Step {step.index}: masked self-attention of the newest position (grey: future)"
    return _rows_figure(z, cols, title, "decoder input (shifted right)", True, layer)


def cross_rows_figure(
    step: Step, src_tokens: tuple[str, ...], layer: int | None = None
) -> go.Figure:
    """The newest decoder position's attention over the source, every layer and head (or only
    ``layer``'s heads)."""
    if step.cross_row is None:
        raise ValueError("this step has no cross-attention row: the model has no encoder.")
    title = f"Step {step.index}: encoder-decoder attention while predicting “{step.chosen}”"
    title = labels([title])[0]
    return _rows_figure(step.cross_row, labels(src_tokens), title, "source token", False, layer)


def topk_figure(step: Step) -> go.Figure:
    """The ``k`` most likely next tokens (softmax of the output layer), the appended one red."""
    names = labels(step.top_tokens)
    colours = [CHOSEN if i == step.chosen_id else OTHER for i in step.top_ids]
    fig = go.Figure(
        go.Bar(
            x=step.top_probs,
            y=list(range(len(names))),
            orientation="h",
            marker_color=colours,
            text=[f"{p:.3f}" for p in step.top_probs],
            textposition="auto",
            hovertemplate="%{x:.4f}<extra></extra>",
        )
    )
    fig.update_yaxes(
        tickmode="array", tickvals=list(range(len(names))), ticktext=names, autorange="reversed"
    )
    fig.update_xaxes(range=[0, 1], title="probability")
    chosen = labels([step.chosen])[0]
    fig.update_layout(
        title=f"Step {step.index}, next token: {chosen}",
        height=max(220, 30 * len(names) + 120),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def beams_figure(step: Step) -> go.Figure:
    """The live hypotheses when the step starts, best first; the followed one is marked."""
    prefixes = [" ".join(labels(b.tokens)) or "(empty)" for b in step.beams]
    fig = go.Figure(
        go.Table(
            header={"values": ["", "outputs so far", "log p"]},
            cells={
                "values": [
                    ["→" if b.on_path else "" for b in step.beams],
                    prefixes,
                    [f"{b.log_prob:.3f}" for b in step.beams],
                ]
            },
            columnwidth=[1, 8, 2],
        )
    )
    fig.update_layout(
        title=f"Step {step.index}: {len(step.beams)} live beams",
        height=90 + 30 * len(step.beams),
        margin={"l": 10, "r": 10, "t": 40, "b": 0},
    )
    return fig


def alignment_figure(alignment: Alignment) -> go.Figure:
    """The model's own output above the reference, position by position; the first divergent
    position outlined. Cells are 1 where the tokens agree, 0 where they differ or one is missing."""
    n = max(len(alignment.model), len(alignment.reference), 1)
    rows = [alignment.model, alignment.reference]
    text = [labels(list(r) + [""] * (n - len(r))) for r in rows]
    z = [
        [float(i < len(r) and i < len(rows[1 - j]) and r[i] == rows[1 - j][i]) for i in range(n)]
        for j, r in enumerate(rows)
    ]
    # the model's row says agree or differ in marks, not only in green and pink (WCAG 1.4.1)
    text[0] = [
        f"{t}<br>{'✓' if same else '✗'}" if i < len(rows[0]) else t
        for i, (t, same) in enumerate(zip(text[0], z[0], strict=True))
    ]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            texttemplate="%{text}",
            zmin=0.0,
            zmax=1.0,
            colorscale=[[0.0, "#f4a6a6"], [1.0, "#c7e9c0"]],
            showscale=False,
            hovertemplate="position %{x}: %{text}<extra></extra>",
        )
    )
    at = alignment.diverges_at
    if at is not None:
        fig.add_shape(type="rect", x0=at - 0.5, x1=at + 0.5, y0=-0.5, y1=1.5, line_width=3)
    fig.update_yaxes(
        tickmode="array",
        tickvals=[0, 1],
        ticktext=["model (greedy)", "reference"],
        autorange="reversed",
    )
    fig.update_xaxes(title="output position (decoder step)", dtick=1)
    where = "identical" if at is None else f"first divergence at position {at}"
    where += " (✓ same token as the reference, ✗ not)"
    fig.update_layout(
        title=f"Model output vs reference: {where}",
        height=220,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig
