"""Figures of retrieval heads over a sweep of needle depths and prompt lengths (Wu et al. 2024's
picture): the heads most often retrieving, each as a depth x length map of its score, every cell
a link to that run's map of the head when the caller gives one. From arrays only; the notebook
draws the same figure from a sweep (``sweep_figure``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.analysis.retrieval.result import FLAG
from viz_transformer.figures.heatmap import with_subtitle
from viz_transformer.records.kinds import head_label

if TYPE_CHECKING:
    from viz_transformer.analysis.retrieval.sweep_result import RetrievalSweep

TOP = 4  # heads drawn
CellLink = Callable[[int, int, int, int], "str | None"]  # (depth i, length j, layer, head) -> URL


def ranked_heads(scores: np.ndarray, threshold: float = FLAG) -> list[tuple[int, int, int]]:
    """Every head as (layer, head, runs at or above ``threshold``), most often retrieving first
    (ties: the higher mean score, then layer and head).

    Args:
        scores: ``[depths, lengths, layers, heads]`` retrieval scores, NaN for a run not made.
    """
    flat = scores.reshape(-1, *scores.shape[2:])
    done = flat[~np.isnan(flat).all(axis=(1, 2))]
    if not len(done):
        return []
    passed = (done >= threshold).sum(0)
    mean = done.mean(0)
    order = sorted(np.ndindex(*passed.shape), key=lambda lh: (-passed[lh], -mean[lh], *lh))
    return [(int(la), int(h), int(passed[la, h])) for la, h in order]


def depth_length_figure(
    scores: np.ndarray,
    depths: Sequence[float],
    lengths: Sequence[int],
    found: np.ndarray | None = None,
    link: CellLink | None = None,
    top: int = TOP,
    threshold: float = FLAG,
) -> go.Figure:
    """The ``top`` heads most often retrieving, each a map of its score over depth (rows) x
    prompt length in tokens (columns, 0: the whole text); a cell's number links to
    ``link(i, j, layer, head)``.

    Args:
        scores: ``[depths, lengths, layers, heads]``, NaN where no run was made (stopped).
        found: ``[depths, lengths]`` whether the run's output held the needle; a cell whose
            run missed it is marked ``✗``; threshold: the score a head retrieves at.
    """
    ranked = ranked_heads(scores, threshold)[:top]
    runs = int((~np.isnan(scores).all(axis=(2, 3))).sum())
    titles = [f"{head_label((la, h))}: {n} of {runs} runs" for la, h, n in ranked]
    fig = make_subplots(rows=1, cols=max(len(ranked), 1), subplot_titles=titles or [""])
    ticks = [f"{n:,}" if n else "whole text" for n in lengths]
    for c, (layer, head, _) in enumerate(ranked, start=1):
        z = scores[:, :, layer, head]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=list(range(len(lengths))),
                y=list(range(len(depths))),
                coloraxis="coloraxis",
                name=head_label((layer, head)),
                customdata=[[[d, ticks[j]] for j in range(len(lengths))] for d in depths],
                hovertemplate=f"{head_label((layer, head))}<br>depth %{{customdata[0]}}, "
                "prompt %{customdata[1]}<br>retrieval %{z:.2f}<extra></extra>",
            ),
            row=1,
            col=c,
        )
        for i, j in np.ndindex(*z.shape):
            if np.isnan(z[i, j]):
                continue
            text = f"{z[i, j]:.2f}" + (" ✗" if found is not None and not found[i, j] else "")
            url = link(i, j, layer, head) if link is not None else None
            if url:
                text = f'<a href="{url}" target="_blank">{text}</a>'
            fig.add_annotation(
                x=j,
                y=i,
                text=text,
                showarrow=False,
                font={"size": 12},
                captureevents=url is not None,
                row=1,
                col=c,
            )
        fig.update_xaxes(
            tickmode="array", tickvals=list(range(len(lengths))), ticktext=ticks, row=1, col=c
        )
        fig.update_yaxes(
            tickmode="array",
            tickvals=list(range(len(depths))),
            ticktext=[f"{d:g}" for d in depths] if c == 1 else [""] * len(depths),
            autorange="reversed",
            row=1,
            col=c,
        )
    fig.update_xaxes(title="prompt tokens")
    fig.update_yaxes(title="needle depth", row=1, col=1)
    missed = found is not None and not bool(np.asarray(found).all())
    subtitle = f"score per run; a head retrieves at {threshold:g} or more" + (
        "; ✗: the model did not copy the needle in that run" if missed else ""
    )
    fig.update_layout(
        title=with_subtitle("Heads most often retrieving, by needle depth and length", subtitle),
        coloraxis={
            "colorscale": "Viridis",
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"title": {"text": "retrieval"}},
        },
        height=max(300, 44 * len(depths) + 180),
        margin={"l": 10, "r": 10, "t": 90, "b": 10},
    )
    return fig


def sweep_figure(sweep: RetrievalSweep, link: CellLink | None = None, top: int = TOP) -> go.Figure:
    """``depth_length_figure`` of a sweep (``vt.retrieval_heads(..., depths=..., lengths=...)``):
    each cell the mean over its counted runs; ✗ where a run of the cell missed the needle. In a
    notebook: ``sweep_figure(sweep)`` shows inline."""
    lengths = [n or 0 for n in sweep.lengths]
    found = sweep.found_share() >= 1.0
    return depth_length_figure(
        sweep.scores(), sweep.depths, lengths, found, link, top, sweep.threshold
    )
