"""Figures of why a head attends: its pre-softmax score map (a cell click picks a query and key),
a score's parts as bars with their values on hover, and what a head writes as logit bars."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_transformer.figures.attention import HEAD_MAX
from viz_transformer.figures.common import labels
from viz_transformer.figures.heatmap import (
    MASKED_GREY,
    block_heatmap,
    label_axes,
    with_subtitle,
)
from viz_transformer.records.tiles import block_reduce

CLICKABLE = 4096  # cells up to which the map carries a clickable point per cell
EXACT = 1e-4  # a rest within this share of the score is rounding (the splits are exact to 1e-4)
PROMOTE, SUPPRESS = "#2166ac", "#b2182b"  # blue up, red down: the diverging scale's ends


def score_map(
    scores: np.ndarray,
    rows: tuple[str, ...],
    cols: tuple[str, ...],
    title: str,
    picked: tuple[int, int] | None = None,
) -> go.Figure:
    """One head's scores ``[q, k]`` on a scale centred at 0, masked cells grey; every cell a
    clickable point (``x`` = key, ``y`` = query) when there are at most ``CLICKABLE``, and the
    ``picked`` (query, key) cell outlined. A map larger than ``HEAD_MAX`` per side is drawn as
    block maxima on axes counted in positions (the browser gets what the screen shows, not
    every score: 1,546 tokens were a 5.9 MB update that froze the tab)."""
    if max(scores.shape) > HEAD_MAX:
        finite = np.where(np.isnan(scores), -np.inf, scores).astype(np.float32)
        small, bq, bk = block_reduce(finite, HEAD_MAX, "max")
        return blocks_map(small, (bq, bk), scores.shape, title, picked)
    z = np.where(np.isfinite(scores), scores, np.nan)
    top = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    rows_l, cols_l = labels(rows), labels(cols)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            zmin=-top,
            zmax=top,
            colorscale="RdBu_r",
            hoverinfo="skip",
            colorbar={"title": {"text": "score"}},
        )
    )
    if z.size <= CLICKABLE:
        q, k = np.nonzero(np.isfinite(z))
        fig.add_trace(
            go.Scatter(
                x=k,
                y=q,
                mode="markers",
                marker={"size": 14, "opacity": 0.0},
                showlegend=False,
                customdata=np.stack([z[q, k], [rows_l[i] for i in q], [cols_l[j] for j in k]], -1),
                hovertemplate="%{customdata[1]} → %{customdata[2]}<br>query %{y}, key %{x}"
                "<br>score %{customdata[0]:.4f}<extra></extra>",
            )
        )
    if picked is not None:
        fig.add_shape(
            type="rect",
            x0=picked[1] - 0.5,
            x1=picked[1] + 0.5,
            y0=picked[0] - 0.5,
            y1=picked[0] + 0.5,
            line={"color": "black", "width": 2},
        )
    label_axes(fig, rows_l, cols_l)
    fig.update_layout(
        title=with_subtitle(title, "click a cell to take its score apart below"),
        xaxis_title="key (attended to)",
        yaxis_title="query (attending)",
        height=min(900, max(360, 28 * len(rows) + 160)),
        plot_bgcolor=MASKED_GREY,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
        clickmode="event+select",
    )
    return fig


def blocks_map(
    small: np.ndarray,
    blocks: tuple[int, int],
    shape: tuple[int, ...],
    title: str,
    picked: tuple[int, int] | None = None,
) -> go.Figure:
    """``score_map`` of a long head from its block maxima ``small`` (blocks of ``blocks`` =
    (query rows, keys), of a ``shape`` = (queries, keys) map; -inf where a whole block is
    masked, drawn grey), placed at their positions, the picked cell's block outlined."""
    bq, bk = blocks
    z = np.where(np.isfinite(small), small, np.nan)
    top = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    fig = go.Figure(
        block_heatmap(
            z,
            bq,
            bk,
            "largest score",
            zmin=-top,
            zmax=top,
            colorscale="RdBu_r",
            colorbar={"title": {"text": "block max"}},
        )
    )
    if picked is not None:
        q0, k0 = picked[0] // bq * bq, picked[1] // bk * bk
        fig.add_shape(
            type="rect",
            x0=k0 - 0.5,
            x1=k0 + bk - 0.5,
            y0=q0 - 0.5,
            y1=q0 + bq - 0.5,
            line={"color": "black", "width": 2},
        )
    note = f"{shape[0]} x {shape[1]} tokens: each cell is the max of a {bq} x {bk} block; "
    note += "pick the query and key below"
    fig.update_xaxes(title="key position (attended to)", range=[-0.5, shape[1] - 0.5])
    fig.update_yaxes(title="query position (attending)", range=[shape[0] - 0.5, -0.5])
    fig.update_layout(
        title=with_subtitle(title, note),
        height=760,
        plot_bgcolor=MASKED_GREY,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


def parts_bars(parts: pd.DataFrame, title: str, top: int | None = None) -> go.Figure:
    """One bar per part (``rest`` last, left out where the split is exact: an empty category
    beside the last part reads as the last part's label), value on hover; ``top``: only the
    largest in magnitude (the others summed into one bar, so the bars still add up to the
    score)."""
    total = float(parts["value"].sum())
    rest = parts[parts["part"] == "rest"]
    rest = rest[rest["value"].abs() > EXACT * max(1.0, abs(total))]
    rows = parts[parts["part"] != "rest"]
    if top is not None and len(rows) > top:
        order = rows["value"].abs().sort_values(ascending=False).index
        rest_sum = rows.loc[order[top:], "value"].sum()
        others = pd.DataFrame({"part": [f"{len(order) - top} others"], "value": [rest_sum]})
        rows = pd.concat([rows.loc[order[:top]], others])
    shown = pd.concat([rows, rest], ignore_index=True)
    hover = "%{x}<br>%{y:.5f}<extra></extra>"
    if "wavelength" in shown:
        hover = "%{x}<br>%{y:.5f}<br>wavelength %{customdata:.1f} positions<extra></extra>"
    fig = go.Figure(
        go.Bar(
            x=shown["part"],
            y=shown["value"],
            hovertemplate=hover,
            customdata=shown.get("wavelength"),
            marker_color=np.where(shown["value"] >= 0, PROMOTE, SUPPRESS),
        )
    )
    fig.update_layout(
        title=with_subtitle(title, f"the bars add up to the score {total:.4f}"),
        yaxis_title="part of the score (score units)",  # the bars sum to the score, not to 1
        height=380,
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    fig.update_xaxes(type="category", tickangle=-60)
    return fig


def series_bars(values: pd.Series, title: str, top: int = 20) -> go.Figure:
    """The ``top`` entries of a marginal (index: component), as ``parts_bars`` draws them."""
    frame = pd.DataFrame({"part": values.index.astype(str), "value": values.to_numpy()})
    return parts_bars(frame, title, top)


def writes_bars(
    promoted: pd.DataFrame, suppressed: pd.DataFrame, head: str, position: str
) -> go.Figure:
    """The tokens a head's output pushes up (blue) and down (red), with their logits on hover,
    titled by the ``head`` and the ``position`` (its tokens shown as typed: ``</s>`` is no tag)."""
    title = f"{head} at {labels([position])[0]}: tokens it promotes and suppresses"
    both = pd.concat([promoted, suppressed.iloc[::-1]], ignore_index=True)
    names = [f"{t} ({i})" for t, i in zip(labels(tuple(both["token"])), both["id"], strict=True)]
    fig = go.Figure(
        go.Bar(
            x=both["logit"],
            y=names,
            orientation="h",
            marker_color=np.where(both["logit"] >= 0, PROMOTE, SUPPRESS),
            hovertemplate="%{y}<br>logit %{x:+.4f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title="logit contribution",
        height=60 + 22 * len(both),
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    fig.update_yaxes(autorange="reversed", type="category")
    return fig
