"""The "why" section of the Q, K, V walkthrough page (pages/qkv_walkthrough.py), private to it:
the head's score map (a cell click picks the query and key), then that score taken apart three
ways (``analysis.why``), each as bars that add up to the score."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from viz_transformer.analysis import why
from viz_transformer.figures import why as figures
from viz_transformer.figures.attention import HEAD_MAX
from viz_transformer.records.qkv import KindCapture
from viz_transformer.ui import focus, qkv_caches, widgets

MAP_KEY = "why_map"
BAND_ROWS = 256  # query rows of a long head's scores made at once for its map
ANCHOR = "why"  # where a retrieval head's link ("Score split at the copy") scrolls to
INTRO = (
    "A weight is the softmax of a score, and the score is a sum: take it apart to see which "
    "dimensions, which inputs and which earlier heads and MLPs make the head look at a key. "
    "Every bar is computed from the model's own q and k; the bars add up to the score."
)
SPLIT_TITLES = {
    "dimension": "By dimension of q · k",
    "input": "By input: token content and position",
    "component": "By residual-stream component (query side · key side)",
}


def pick_cell() -> None:
    """Callback of the score map: the clicked cell becomes the query and key."""
    points = st.session_state[MAP_KEY].selection.get("points", [])
    if points:
        st.session_state["why_query"] = int(points[0]["y"])
        st.session_state["why_key"] = int(points[0]["x"])


def _named(tokens: tuple[str, ...]):
    """``format_func`` of a position picker: ``3: cat``."""
    return lambda i: f"{i}: {tokens[i]}"


def _pickers(cap: KindCapture, row_of: Callable[[int], np.ndarray], position: int) -> int:
    """Query and key selectboxes (the map's click sets them); the key starts at the query's
    largest score (``row_of(query)``: its scores over every key). Returns the key."""
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    if not 0 <= st.session_state.get("why_query", -1) < n_q:
        st.session_state["why_query"] = position
    row = row_of(st.session_state["why_query"])
    if not 0 <= st.session_state.get("why_key", -1) < n_k or np.isneginf(
        row[st.session_state["why_key"]]
    ):
        st.session_state["why_key"] = int(np.argmax(row))
    left, right = st.columns(2)
    left.selectbox("Query", range(n_q), format_func=_named(cap.query_tokens), key="why_query")
    right.selectbox("Key", range(n_k), format_func=_named(cap.key_tokens), key="why_key")
    return st.session_state["why_key"]


def _row_of(
    cap: KindCapture, layer: int, head: int, scores: np.ndarray | None
) -> Callable[[int], np.ndarray]:
    """A query's scores over every key: from the whole map, or (a long head) made alone."""
    if scores is not None:
        return lambda query: scores[query]
    return lambda query: why.head_scores(cap, layer, head, range(query, query + 1))[0]


def _blocks(cap: KindCapture, layer: int, head: int) -> tuple[np.ndarray, tuple[int, int]]:
    """A long head's score map as block maxima (at most ``HEAD_MAX`` a side), made a band of
    query rows at a time: the whole head is never held (8,000 tokens: 512 MB of float64)."""
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    bq, bk = -(-n_q // HEAD_MAX), -(-n_k // HEAD_MAX)
    band = bq * max(1, BAND_ROWS // bq)  # whole blocks of rows
    out = []
    for start in range(0, n_q, band):
        rows = why.head_scores(cap, layer, head, range(start, min(start + band, n_q)))
        padded = np.full((-(-len(rows) // bq) * bq, -(-n_k // bk) * bk), -np.inf)
        padded[: len(rows), :n_k] = rows
        out.append(padded.reshape(len(padded) // bq, bq, -1, bk).max(axis=(1, 3)))
    return np.concatenate(out).astype(np.float32), (bq, bk)


def _split(
    name: str, text: str, cap: KindCapture, layer: int, head: int, pair: tuple[int, int], by: str
) -> None:
    """One split's bars, or why the model or layer has none. The page's capture holds one layer:
    the component split reads the earlier ones at the query and the key in a pass of its own."""
    try:
        if by == "component" and cap.resid is not None and cap.kind != "cross":
            parts = qkv_caches.score_parts(name, text, cap.kind, layer, head, pair)
        else:
            parts = why.split_score(cap, layer, head, *pair, by)  # type: ignore[arg-type]
    except ValueError as exc:
        st.markdown(f"**{SPLIT_TITLES[by]}**")
        st.info(str(exc))
        return
    stem = f"why-{cap.kind}-L{layer}-H{head}-q{pair[0]}-k{pair[1]}-{by}"
    if by != "component":  # the chart's title names the split: no heading above it
        widgets.chart(figures.parts_bars(parts, SPLIT_TITLES[by], top=32), stem, key=stem)
        if by == "input":
            st.caption(why.position_note(cap))
        return
    st.markdown(f"**{SPLIT_TITLES[by]}**")  # over its three charts, each titled by its side
    query_side, key_side = why.marginals(parts)
    sides = (
        ("query", query_side, "Query side: what makes it ask"),
        ("key", key_side, "Key side: what makes it answer"),
    )
    for column, (side, series, title) in zip(st.columns(2), sides, strict=True):
        with column:
            name = f"{stem}-{side}"
            widgets.chart(figures.series_bars(series, title), name, key=name, share=0.5)
    widgets.chart(
        figures.parts_bars(parts, "Top pairs (query part . key part)", top=20),
        f"{stem}-pairs",
        key=f"{stem}-pairs",
    )
    st.caption(
        "Each token's norm scale is held at its value in this run, so the pairs add up to the "
        "score exactly; the MLP parts are each block's change of the stream less its attention."
    )


def section(name: str, text: str, cap: KindCapture, layer: int, head: int, position: int) -> None:
    """The score map of the chosen head, the query and key pickers, and the three splits."""
    with focus.anchor(ANCHOR):
        _section(name, text, cap, layer, head, position)
    focus.apply()  # a retrieval head's link scrolls here (the page's last anchor)


def _section(name: str, text: str, cap: KindCapture, layer: int, head: int, position: int) -> None:
    st.subheader("Why this head looks there")
    st.markdown(INTRO)
    shape = (len(cap.query_tokens), len(cap.key_tokens))
    long = max(shape) > HEAD_MAX
    try:
        scores = None if long else why.head_scores(cap, layer, head)
        row_of = _row_of(cap, layer, head, scores)
        key = _pickers(cap, row_of, position)
        query = st.session_state["why_query"]
        title = f"Layer {layer}, head {head}: scores before the softmax"
        if long:
            small, blocks = _blocks(cap, layer, head)
            fig = figures.blocks_map(small, blocks, shape, title, (query, key))
        else:
            fig = figures.score_map(scores, cap.query_tokens, cap.key_tokens, title, (query, key))
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    widgets.chart(fig, f"why-scores-{cap.kind}-L{layer}-H{head}", key=MAP_KEY, on_select=pick_cell)
    row = row_of(query)
    weight = np.exp(row - row.max())
    st.markdown(
        f"Score of **{widgets.literal(cap.query_tokens[query])}** on "
        f"**{widgets.literal(cap.key_tokens[key])}**: {row[key]:.4f}, weight "
        f"{weight[key] / weight.sum():.3f}."
    )
    for by in why.SPLITS:
        _split(name, text, cap, layer, head, (query, key), by)
    # a long head's download is what the map draws and the query's whole row, not T x T scores
    arrays = {"block_max": small, f"query_{query}": row} if long else {"scores": scores}
    arrays = {n: np.where(np.isfinite(a), a, np.nan) for n, a in arrays.items()}
    widgets.downloads(f"why-{cap.kind}-L{layer}-H{head}", arrays, _meta(cap, layer, head))


def _meta(cap: KindCapture, layer: int, head: int) -> dict[str, object]:
    return {
        "model": cap.model_name,
        "kind": cap.kind,
        "layer": layer,
        "head": head,
        "query_tokens": list(cap.query_tokens),
        "key_tokens": list(cap.key_tokens),
        "masked": "NaN",
    }
