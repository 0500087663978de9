"""Figures of the Q, K, V walkthrough: one query token through one head, from a ``Walkthrough``.

Vectors are drawn as heatmap strips (one row per vector, one column per dimension) on a diverging
scale centred on 0, with the rounded value in each cell when the vectors are short enough to read.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_transformer.analysis.walkthrough import Walkthrough
from viz_transformer.figures.common import labels
from viz_transformer.records.kinds import KIND_TITLES

DIVERGING = "RdBu_r"  # red positive, blue negative, white 0
# wider strips show values in the hover only: 32 one-decimal numbers overlapped at 1024 px in
# presenter mode (numbers in cells grow 1.6 times there); 16 two-decimal ones fit
MAX_TEXT_COLUMNS = 16
KEYS_MAX = 64  # keys steps 2 to 6 draw (``shown_keys``): a screen of strips
ROW_PX = 24
GAP_PX = 44  # between stacked subplots: room for the lower one's title
MARGIN = {"l": 10, "r": 10, "t": 80, "b": 40}  # the top holds the title and a subplot title


def _where(w: Walkthrough) -> str:
    token = labels([w.query_tokens[w.position]])[0]
    return f"{KIND_TITLES[w.kind].split()[0]}, layer {w.layer}, query “{token}” ({w.position})"


def _strips(
    fig: go.Figure, z: np.ndarray, rows: list[str], row: int, zmax: float, hover: str
) -> None:
    """Add ``z`` ``[rows, dims]`` as heatmap strips to subplot ``row``, rows labelled."""
    text = None if z.shape[1] > MAX_TEXT_COLUMNS else "%{z:.2f}"
    fig.add_trace(
        go.Heatmap(
            z=z,
            zmin=-zmax,
            zmax=zmax,
            colorscale=DIVERGING,
            showscale=row == 1,
            texttemplate=text,
            textfont={"size": 9},
            customdata=np.array([[r] * z.shape[1] for r in rows], dtype=object),
            hovertemplate=f"%{{customdata}}<br>{hover} %{{x}}: %{{z:.4f}}<extra></extra>",
        ),
        row=row,
        col=1,
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(rows))),
        ticktext=rows,
        range=[len(rows) - 0.5, -0.5],
        row=row,
        col=1,
    )


def _limit(*arrays: np.ndarray) -> float:
    """One symmetric colour range for every strip of a figure, so colours compare."""
    return float(max(np.abs(a).max() for a in arrays)) or 1.0


def _height(n_rows: int) -> int:
    return 130 + ROW_PX * n_rows


def _spacing(n_rows: int) -> float:
    """Vertical spacing between subplots as plotly takes it, a fraction of the plot area (the
    height less the top and bottom margins): ``GAP_PX`` pixels, so a subplot's title never lands
    on the subplot above it, however tall the figure."""
    return min(0.5, GAP_PX / (_height(n_rows) - MARGIN["t"] - MARGIN["b"]))


def _layout(fig: go.Figure, title: str, n_rows: int, xtitle: str, last: int = 1) -> go.Figure:
    """Title, a height of ``n_rows`` strip rows, and the x title under subplot ``last``; the
    title sits at the top of the figure with room below it for the first subplot's title."""
    fig.update_layout(
        title={"text": title, "y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 12}},
        height=_height(n_rows),
        margin=MARGIN,
    )
    fig.update_xaxes(title_text=xtitle, row=last, col=1)
    return fig


def input_figure(w: Walkthrough) -> go.Figure:
    """Step 1: the layer input x_i; at layer 0 its parts sqrt(d_model)·embedding and PE (3.4, 3.5).

    Args:
        w: from ``walkthrough.explain``.
    """
    if w.embed is not None and w.pos is not None:
        z = np.stack([w.embed, w.pos, w.x])
        rows = ["√d_model · embedding", "+ positional encoding", "= x (layer input)"]
    else:
        z, rows = w.x[None], ["x (layer input)"]
    fig = make_subplots(rows=1, cols=1)
    _strips(fig, z, rows, 1, _limit(z), "dimension")
    return _layout(fig, f"Step 1, the input: {_where(w)}", len(rows), "dimension of d_model")


def shown_keys(w: Walkthrough) -> np.ndarray:
    """The keys steps 2 to 6 draw, in position order: every key up to ``KEYS_MAX``, else the
    ``KEYS_MAX`` the query weighs most (a long input's thousands of strips would be a page
    tens of thousands of pixels tall and megabytes to send; the downloads hold every key)."""
    n = len(w.key_tokens)
    if n <= KEYS_MAX:
        return np.arange(n)
    return np.sort(np.argsort(-w.weights, kind="stable")[:KEYS_MAX])


def _keys_note(w: Walkthrough, shown: np.ndarray) -> str:
    """What a figure's title adds when it draws some of the keys only."""
    n = len(w.key_tokens)
    return "" if len(shown) == n else f" ({len(shown)} of {n:,} keys: those it weighs most)"


def vectors_figure(w: Walkthrough) -> go.Figure:
    """Step 2: this head's q of the query and k_j, v_j of each key j drawn (``shown_keys``),
    ``d_k`` numbers each."""
    kept = shown_keys(w)
    keys = labels(w.key_tokens)
    keys = [f"{keys[j]} (masked)" if not w.keep[j] else keys[j] for j in kept]
    n = len(keys)
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        row_heights=[1 / (2 * n + 1), n / (2 * n + 1), n / (2 * n + 1)],
        vertical_spacing=_spacing(2 * n + 4),
        subplot_titles=("query q", "keys k_j", "values v_j"),
    )
    k, v = w.k[kept], w.v[kept]
    zmax = _limit(w.q, k, v)
    query = labels([w.query_tokens[w.position]])
    for row, (z, rows) in enumerate(((w.q[None], query), (k, keys), (v, keys)), start=1):
        _strips(fig, z, rows, row, zmax, "dimension")
    title = f"Step 2, head {w.head}: {_where(w)}{_keys_note(w, kept)}"
    return _layout(fig, title, 2 * n + 4, "dimension of d_k", last=3)


def _number(value: float) -> str:
    return f"{value:.3f}" if np.isfinite(value) else "−∞ (masked)"


def scores_table(w: Walkthrough) -> go.Figure:
    """Steps 3 to 5 as a table, one row per key j drawn (``shown_keys``): q·k_j, divided by
    sqrt(d_k), softmax (over every key)."""
    kept = shown_keys(w)
    scaled_title = "q·k_j / √d_k" if w.divided else "q·k_j (this model does not divide)"
    header = ["j", "key token", "q·k_j", scaled_title, "softmax a_j"]
    names = labels(w.key_tokens)
    cells = [
        [int(j) for j in kept],
        [names[j] for j in kept],
        [_number(s) for s in w.raw[kept]],
        [_number(s) for s in w.scaled[kept]],
        [f"{a:.4f}" for a in w.weights[kept]],
    ]
    fig = go.Figure(
        go.Table(
            header={"values": header, "align": "left", "font": {"size": 13}},
            cells={"values": cells, "align": "left", "height": 24},
            columnwidth=[0.5, 2, 1.3, 1.8, 1.3],
        )
    )
    title = f"Steps 3 to 5, head {w.head}: {_where(w)}{_keys_note(w, kept)}"
    fig.update_layout(
        title=title,
        height=75 + 25 * (len(kept) + 1),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
    )
    return fig


def weighted_sum_figure(w: Walkthrough) -> go.Figure:
    """Step 6: the rows a_j v_j of the keys drawn (``shown_keys``) and the sum z over every key,
    this head's output for the query."""
    kept = shown_keys(w)
    terms = w.weights[kept, None] * w.v[kept]  # (keys drawn, d_k)
    names = labels(w.key_tokens)
    rows = [f"{w.weights[j]:.3f} × v({names[j]})" for j in kept]
    n = len(rows)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[n / (n + 1), 1 / (n + 1)],
        vertical_spacing=_spacing(n + 3),
        subplot_titles=("a_j v_j", "z = Σ_j a_j v_j"),
    )
    zmax = _limit(terms, w.z)
    _strips(fig, terms, rows, 1, zmax, "dimension")
    _strips(fig, w.z[None], ["z"], 2, zmax, "dimension")
    title = f"Step 6, head {w.head}: {_where(w)}{_keys_note(w, kept)}"
    return _layout(fig, title, n + 3, "dimension of d_k", last=2)


def output_figure(w: Walkthrough) -> go.Figure:
    """Concat(head_1..head_h) and its product with W^O plus b^O: the sub-layer output (3.2.2)."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=_spacing(6),
        subplot_titles=(
            f"Concat of the {w.n_heads} heads' z (head {w.head} outlined)",
            "Concat · W^O + b^O",
        ),
    )
    zmax = _limit(w.concat, w.out)
    _strips(fig, w.concat[None], ["concat"], 1, zmax, "dimension")
    _strips(fig, w.out[None], ["output"], 2, zmax, "dimension")
    for h in range(1, w.n_heads):  # head boundaries
        fig.add_vline(x=h * w.d_k - 0.5, line={"color": "black", "width": 1}, row=1, col=1)
    fig.add_shape(
        type="rect",
        x0=w.head * w.d_k - 0.5,
        x1=(w.head + 1) * w.d_k - 0.5,
        y0=-0.5,
        y1=0.5,
        line={"color": "black", "width": 3},
        row=1,
        col=1,
    )
    title = f"Step 7, all heads through W^O: {_where(w)}"
    return _layout(fig, title, 6, "dimension of d_model", last=2)
