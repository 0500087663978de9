"""Figures of what heads do: a layers x heads map of one score (importance, patching, a role),
and the logit lens table, from arrays only."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_transformer.figures.attention import HEAD_MAX
from viz_transformer.figures.common import labels
from viz_transformer.figures.heatmap import (
    axes,
    downsampled,
    heatmap,
    reduced_note,
    shown,
    with_subtitle,
)
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.records.trace import Trace

NUMBERS_UP_TO = 8  # heads per row whose values fit in their cells on a projector
LENS_ROW_CHARS = 36  # cell text of a logit lens row: a 405 px plot at 1024 px presenter, 19 px font


def head_grid(
    scores: np.ndarray,
    title: str,
    colorbar: str,
    diverging: bool = False,
    subtitle: str | None = None,
    numbers: bool | None = None,
) -> go.Figure:
    """One cell per head: ``scores`` ``[layers, heads]``, layer 0 on top, every layer and head
    labelled, the value in the hover and, when ``numbers`` (by default: while at most
    ``NUMBERS_UP_TO`` heads share a row), in each cell at a fixed readable size (two decimals;
    plotly would otherwise shrink them to fit small cells). A grid in a narrow column passes
    ``numbers=False``.

    ``diverging`` centres a red-blue scale on 0 (importance and patching can be negative).
    """
    layers, heads = scores.shape
    bound = float(np.nanmax(np.abs(scores))) if diverging and scores.size else None
    numbers = heads <= NUMBERS_UP_TO if numbers is None else numbers
    cells = {
        "text": [[f"{v:.2f}" for v in row] for row in scores],
        "texttemplate": "%{text}",
        "textfont": {"size": 12},
    }
    fig = go.Figure(
        go.Heatmap(
            z=scores,
            **(cells if numbers else {}),
            colorscale="RdBu_r" if diverging else "Viridis",
            zmid=0 if diverging else None,
            zmin=-bound if bound else None,
            zmax=bound if bound else None,
            colorbar={"title": colorbar},
            hovertemplate="layer %{y}, head %{x}<br>" + colorbar + " %{z:.4f}<extra></extra>",
        )
    )
    if not numbers:
        subtitle = ", ".join(filter(None, [subtitle, "values in the hover"]))
    # numeric axes with every tick named: a category axis skips labels when it is crowded
    fig.update_xaxes(
        title="head",
        tickmode="array",
        tickvals=list(range(heads)),
        ticktext=[f"H{h}" for h in range(heads)],
    )
    fig.update_yaxes(
        title="layer",
        tickmode="array",
        tickvals=list(range(layers)),
        ticktext=[f"L{i}" for i in range(layers)],
        autorange="reversed",
    )
    fig.update_layout(
        title=with_subtitle(title, subtitle) if subtitle else title,
        height=max(220, 48 * layers + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def cut(token: str, room: int) -> str:
    """``token`` in at most ``room`` characters: a longer one keeps its start and ends in "…"."""
    return token if len(token) <= room else token[: max(room - 1, 0)] + "…"


def lens_figure(
    inputs: tuple[str, ...], tokens: tuple[tuple[str, ...], ...], probs: np.ndarray
) -> go.Figure:
    """The logit lens as a table-like map: a row per decoder layer, a column per decoder
    position, each cell that layer's most likely next token, coloured by its probability. A
    token longer than its cell holds (``LENS_ROW_CHARS`` shared by the columns) is cut to its
    start and "…"; with more than 18 columns the tokens are in the hover only (always whole)."""
    layers = len(tokens)
    # escaped: plotly reads "<s>" as markup and drew "0:" (issue 28)
    cols = [f"{i}: {t}" for i, t in enumerate(labels(inputs))]
    room = LENS_ROW_CHARS // max(len(inputs), 1)  # a cell's characters, so neighbours never meet
    fig = go.Figure(
        go.Heatmap(
            z=probs,
            x=cols,
            y=[f"after layer {i}" for i in range(layers)],
            text=[labels([cut(t, room) for t in row]) for row in tokens],
            texttemplate="%{text}" if room >= 2 else None,
            customdata=[labels(row) for row in tokens],  # the whole token, in the hover
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar={"title": "probability"},
            hovertemplate="%{y}, input %{x}<br>next: %{customdata} (%{z:.3f})<extra></extra>",
        )
    )
    title = "Logit lens: each decoder layer's stream read through the output layer"
    fig.update_layout(
        title=title if room >= 2 else with_subtitle(title, "tokens in the hover"),
        xaxis_title="decoder input (position: token)",
        xaxis_tickangle=-90,  # upright: one column apart however long the tokens
        yaxis={"autorange": "reversed"},
        height=max(220, 60 * layers + 160),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def token_effect_figure(
    tokens: tuple[str, ...], normal: np.ndarray, ablated: np.ndarray, hurt: list[int], what: str
) -> go.Figure:
    """Each output token's log-probability, normally and with ``what`` ablated, side by side;
    the ``hurt`` positions (the tokens that lost most) are marked in red on the axis."""
    names = [f"{i}: {t}" for i, t in enumerate(labels(tokens))]
    ticks = [f"<b style='color:#d62728'>{n}</b>" if i in hurt else n for i, n in enumerate(names)]
    fig = go.Figure()
    for values, label, colour in ((normal, "normal", "#1f77b4"), (ablated, what, "#d62728")):
        fig.add_trace(
            go.Bar(
                x=list(range(len(names))),
                y=values,
                name=label,
                marker_color=colour,
                customdata=np.exp(values),
                text=[f"{p:.0%}" for p in np.exp(values)],
                textposition="outside",
                hovertemplate=f"{label}<br>log p %{{y:.3f}} (p %{{customdata:.3f}})<extra></extra>",
            )
        )
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(names))),
        ticktext=ticks,
        tickangle=-90,
        title="output token (the normal greedy output)",
    )
    low = float(min(normal.min(), ablated.min(), 0.0)) if len(names) else 0.0
    fig.update_yaxes(title="log p (0 = certain)", range=[low * 1.15 - 0.3, 0.5])
    fig.update_layout(
        title=with_subtitle(
            "Each output token's log-probability with and without the ablation",
            "red tokens lost most; the label over a bar is its probability",
        ),
        barmode="group",
        height=380,
        legend_orientation="h",
        legend_y=1.02,
        legend_x=1,
        legend_xanchor="right",
        legend_yanchor="bottom",
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
    )
    return fig


def weighted_figure(
    trace: Trace, kind: AttentionKind, weighted: np.ndarray, layer: int, head: int
) -> go.Figure:
    """One head's value-weighted map ``[q, k]`` drawn as the Attention maps page draws its
    weights (same labels, row convention and sizing; block maxima past ``HEAD_MAX`` tokens), on
    its own scale from 0 to its largest norm."""
    rows, cols, ri, ci, ylabel, _ = axes(trace, kind, False)
    title = f"{KIND_TITLES[kind]}, layer {layer}, head {head}: ‖α f(x)‖, weighted by value norm"
    z, bq, bk = shown(weighted, kind, ri, ci, HEAD_MAX)
    if bq == bk == 1:
        fig = heatmap(z, rows, cols, title, ylabel)
    else:
        note = reduced_note(len(ri), len(ci), HEAD_MAX)
        fig = downsampled(z, bq, bk, (len(ri), len(ci)), with_subtitle(title, note), ylabel)
    top = float(np.nanmax(z)) if np.isfinite(z).any() else 1.0
    return fig.update_traces(zmax=top or 1.0, colorbar_title_text="‖α f(x)‖")
