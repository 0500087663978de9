"""What the Retrieval heads section of What heads do shows once a run or a sweep is done, private
to it (``retrieval.py`` runs them): the counts a reader needs (heads that passed, the threshold,
the prompt's length, how far back the copy reaches), the grid or the depth x length picture, and
real links (openable in a new tab) to each flagged head's map zoomed on the needle and to its
score split at the copy. A link carries the run as ``ret_run`` (``ui.retrieval_view``): the
sidebar's sentence is never replaced."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from viz_transformer.analysis.retrieval.run import FLAG, RetrievalResult
from viz_transformer.analysis.retrieval.sweep import RetrievalSweep
from viz_transformer.figures import heads as head_figures
from viz_transformer.figures import retrieval as figures
from viz_transformer.records.kinds import head_label
from viz_transformer.records.retrieval_ref import RunRef
from viz_transformer.ui import retrieval_view, widgets

SHOWN = 5  # flagged heads offered as buttons (all of them are links in the table)
WINDOW = 32  # the zoom window a map link opens
LINKS = {
    "map": st.column_config.LinkColumn("Map at the needle", display_text="open map"),
    "why": st.column_config.LinkColumn("Score split at the copy", display_text="open split"),
}


@dataclass(frozen=True)
class Cell:
    """One run of a sweep as its links need it: the run, its prompt's length, the query row of
    the first output step, where the needle starts and the first token to copy."""

    ref: RunRef
    tokens: int
    row: int
    needle: int
    answer: int  # the first token the output should copy


def map_link(name: str, ref: RunRef, layer: int, head: int, row: int, needle: int) -> str:
    """The head's map on Attention maps, zoomed so the window holds the copying row and the
    needle (a long map; a short one is drawn whole)."""
    view = {
        "kind": "decoder",
        "layer": layer,
        "head": head,
        "attn_tab": "Maps",
        "zoom": True,
        "zoom_q": max(0, row - 8),
        "zoom_k": max(0, needle - 8),
        "zoom_size": WINDOW,
    }
    return retrieval_view.link("attention_maps", name, ref, view)


def why_link(name: str, ref: RunRef, layer: int, head: int, row: int, key: int) -> str:
    """The head's score split on the Q, K, V walkthrough at query ``row`` and key ``key``."""
    view = {
        "kind": "decoder",
        "layer": layer,
        "head": head,
        "token": row,
        "why_query": row,
        "why_key": key,
    }
    return retrieval_view.link("qkv_walkthrough", name, ref, view)


def run(name: str, r: RetrievalResult, ref: RunRef) -> None:
    """One run: counts, the heads grid, the output, the flagged heads with their links."""
    flagged = r.flagged()
    n_heads = r.retrieval.size
    needle = r.needle_positions[0] if r.needle_positions else 0
    first = int(r.rows[0]) if len(r.rows) else len(r.prompt_tokens) - 1
    best = r.copy_step(*flagged[0][:2]) if flagged else None
    row, key = best or (first, r.answer_positions[0] if r.answer_positions else needle)
    st.markdown(
        f"**{len(flagged)} of {n_heads} heads** passed the threshold (retrieval ≥ {FLAG:g}). "
        f"Prompt: {len(r.prompt_tokens):,} tokens, the needle at positions "
        f"{needle:,}–{r.needle_positions[-1] if r.needle_positions else needle:,}; the copy "
        f"reaches back **{row - key:,} tokens** (query {row:,} to key {key:,})."
    )
    scores = r.table.pivot(index="layer", columns="head", values="retrieval").to_numpy()
    sub = "share of the needle's second half the head copied"
    fig = head_figures.head_grid(scores, "Retrieval score of each head", "retrieval", subtitle=sub)
    widgets.chart(fig, "retrieval-heads")
    found = "found" if r.found else "**not** found"
    st.markdown(f"Output: {widgets.literal(r.output)!s} (the needle's second half {found})")
    for message in r.messages:
        st.warning(widgets.literal(message))
    if not flagged:
        st.info(f"No head copied the needle (retrieval below {FLAG:g}).")
        st.dataframe(r.table.head(10), hide_index=True)
        return
    rows = []
    for layer, head, score in flagged:
        q, k = r.copy_step(layer, head) or (first, needle)
        rows.append(
            {
                "head": head_label((layer, head)),
                "retrieval": score,
                "map": map_link(name, ref, layer, head, q, needle),
                "why": why_link(name, ref, layer, head, q, k),
            }
        )
    for entry in rows[:SHOWN]:
        left, mid, right = st.columns([2, 3, 3])
        left.markdown(f"**{entry['head']}**: retrieval {entry['retrieval']:.2f}")
        mid.link_button("Map at the needle", entry["map"], icon=":material/open_in_new:")
        right.link_button("Score split at the copy", entry["why"], icon=":material/open_in_new:")
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config=LINKS, key="ret_flagged")


def sweep(
    name: str, s: RetrievalSweep, depths: tuple, lengths: tuple, cells: dict[tuple, Cell]
) -> None:
    """A sweep: counts, the heads most often retrieving over depth x length (each cell a link
    to that head's map in that run), a row per run with its links, each head's mean."""
    scores, found = figures.sweep_grid(s, depths, lengths)
    passed = {(la, h) for la, h, n in figures.ranked_heads(scores) if n}
    sizes = [c.tokens for c in cells.values()]
    st.markdown(
        f"**{len(s.runs)} runs** ({len(depths)} depths × {len(lengths)} lengths); needle copied "
        f"in {s.found:.0%} of them. **{len(passed)} heads** passed the threshold (retrieval ≥ "
        f"{FLAG:g}) in at least one run. Prompts of {min(sizes):,}–{max(sizes):,} tokens."
    )

    def link(i: int, j: int, layer: int, head: int) -> str | None:
        c = cells.get((float(depths[i]), j))
        return None if c is None else map_link(name, c.ref, layer, head, c.row, c.needle)

    fig = figures.depth_length_figure(scores, depths, lengths, found, link)
    widgets.chart(fig, "retrieval-depth-length")
    rows = []
    for (depth, j), c in sorted(cells.items()):
        i = list(map(float, depths)).index(depth)
        layer, head = divmod(int(scores[i, j].argmax()), scores.shape[3])
        rows.append(
            {
                "depth": depth,
                "haystack tokens": lengths[j],
                "prompt tokens": c.tokens,
                "copied": bool(found[i, j]),
                "heads passed": int((scores[i, j] >= FLAG).sum()),
                "best head": head_label((layer, head)),
                "retrieval": float(scores[i, j].max()),
                "map": map_link(name, c.ref, layer, head, c.row, c.needle),
                "why": why_link(name, c.ref, layer, head, c.row, c.answer),
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config=LINKS, key="ret_runs")
    st.dataframe(s.table.head(10), hide_index=True, key="ret_means")
