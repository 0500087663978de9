"""What the Retrieval heads section of What heads do shows once a run or a sweep is done, private
to it (``retrieval.py`` runs them): the counts a reader needs (heads that passed, the threshold,
the prompt's length, how far back the copy reaches), the grid or the depth x length picture, and
real links (openable in a new tab) to each flagged head's map zoomed on the needle and to its
score split at the copy. A link carries the run as ``ret_run`` (``ui.retrieval_view``): the
sidebar's sentence is never replaced."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from viz_transformer.analysis.retrieval.result import RetrievalResult, compare_forms
from viz_transformer.analysis.retrieval.sweep_result import RetrievalSweep
from viz_transformer.figures import heads as head_figures
from viz_transformer.figures import retrieval as figures
from viz_transformer.records.kinds import head_label
from viz_transformer.records.retrieval_ref import RunRef
from viz_transformer.ui import budget, caches, qkv_caches, retrieval_view, widgets

SHOWN = 5  # flagged heads offered as buttons (all of them are links in the table)
WINDOW = 32  # the zoom window a map link opens
LINKS = {
    "map": st.column_config.LinkColumn("Map at the needle", display_text="open map"),
    "why": st.column_config.LinkColumn("Score split at the copy", display_text="open split"),
}


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


def _at(r: RetrievalResult, layer: int, head: int) -> tuple[int, int, int]:
    """Where a head's links open: its first copy's query row and key (else the first output
    step's row and the answer's first token), and the needle's first position."""
    needle = r.needle_positions[0] if r.needle_positions else 0
    first = int(r.rows[0]) if len(r.rows) else r.prompt_length - 1
    row, key = r.copy_step(layer, head) or (first, (r.answer_positions or (needle,))[0])
    return row, key, needle


def _counts(r: RetrievalResult) -> str:
    """Heads passed, the threshold, the prompt's length and how far back the copy reaches."""
    back = r.copy_distance
    reach = f"the copy reaches back **{back:,} tokens**" if back is not None else "no output"
    where = f"{r.needle_positions[0]:,}–{r.needle_positions[-1]:,}" if r.needle_positions else "–"
    return (
        f"**{r.passed} of {r.retrieval.size} heads** passed the threshold (retrieval ≥ "
        f"{r.threshold:g}). Prompt: {r.prompt_length:,} tokens, the needle at positions {where}; "
        f"{reach} (from the first output step to the first token it should copy)."
    )


def split_refused(name: str, r: RetrievalResult) -> str | None:
    """Why the run's score split cannot open (the walkthrough's capture of a layer, refused
    past the memory a job may take), or None when it fits."""
    n = r.prompt_length + len(r.output_tokens)
    need = qkv_caches.need(name, n, n)
    limit, why = budget.room(caches.model(name).device)
    if need <= limit:
        return None
    return (
        f"No score split link: the Q, K, V walkthrough's capture of a layer takes "
        f"{budget.gb(need)} at {n:,} tokens, more than {budget.gb(limit)} ({why}). Sweep shorter "
        "prompt lengths for runs whose split opens; the map links work at any length."
    )


def run(name: str, r: RetrievalResult, ref: RunRef) -> None:
    """One run: counts, the heads grid, the output, the flagged heads with their links."""
    st.markdown(_counts(r))
    scores = r.table.pivot(index="layer", columns="head", values="retrieval").to_numpy()
    sub = "share of the needle's answer tokens the head copied"
    fig = head_figures.head_grid(scores, "Retrieval score of each head", "retrieval", subtitle=sub)
    widgets.chart(fig, "retrieval-heads")
    found = "found" if r.found else "**not** found"
    st.markdown(
        f"Output: {widgets.literal(r.output)!s} (the needle {found}: ROUGE-1 recall "
        f"{r.recall:.2f}, found above {r.found_at:g})"
    )
    for message in r.messages:
        st.warning(widgets.literal(message))
    flagged = r.flagged()
    if not flagged:
        st.info(f"No head copied the needle (retrieval below {r.threshold:g}).")
        st.dataframe(r.table.head(10), hide_index=True)
        return
    refused, rows = split_refused(name, r), []
    for layer, head, score in flagged:
        row, key, needle = _at(r, layer, head)
        rows.append(
            {
                "head": head_label((layer, head)),
                "retrieval": score,
                "map": map_link(name, ref, layer, head, row, needle),
                "why": None if refused else why_link(name, ref, layer, head, row, key),
            }
        )
    for entry in rows[:SHOWN]:
        left, mid, right = st.columns([2, 3, 3])
        left.markdown(f"**{entry['head']}**: retrieval {entry['retrieval']:.2f}")
        mid.link_button("Map at the needle", entry["map"], icon=":material/open_in_new:")
        if entry["why"]:
            right.link_button(
                "Score split at the copy", entry["why"], icon=":material/open_in_new:"
            )
    if refused:
        st.caption(refused)
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config=LINKS, key="ret_flagged")
    st.caption(f"Counting: {r.counting}.")


def sweep(name: str, s: RetrievalSweep, ref: Callable[[float, int | None], RunRef]) -> None:
    """A sweep: counts, the heads most often retrieving over depth x length (each cell a link
    to that head's map in that run), a row per run with its links, each head's mean; ``ref``
    names the run of a (depth, length) for its links."""
    sizes = s.prompt_lengths()
    st.markdown(
        f"**{len(s.runs)} runs** ({len(s.depths)} depths × {len(s.lengths)} lengths); needle "
        f"found in {s.found:.0%} of them. Means over "
        f"{'the runs that found it' if s.only_found else 'every run'}: **{s.passed} of "
        f"{s.runs[0].retrieval.size} heads** reach the threshold (retrieval ≥ {s.threshold:g}). "
        f"Prompts of {sizes.min():,}–{sizes.max():,} tokens."
    )

    def link(i: int, j: int, layer: int, head: int) -> str | None:
        cell = s.cell(s.depths[i], s.lengths[j])
        if not cell:
            return None
        row, _, needle = _at(cell[0].result, layer, head)
        url = map_link(name, ref(s.depths[i], s.lengths[j]), layer, head, row, needle)
        return retrieval_view.for_plotly(url)

    widgets.chart(figures.sweep_figure(s, link), "retrieval-depth-length")
    rows = []
    for one in s.runs:
        r, at = one.result, ref(one.depth, one.length)
        layer, head, score = (r.flagged(0.0) or [(0, 0, 0.0)])[0]
        row, key, needle = _at(r, layer, head)
        rows.append(
            {
                "depth": one.depth,
                "prompt length": f"{one.length:,}" if one.length else "whole text",
                "prompt tokens": r.prompt_length,
                "found": r.found,
                "heads passed": r.passed,
                "best head": head_label((layer, head)),
                "retrieval": score,
                "map": map_link(name, at, layer, head, row, needle),
                "why": None
                if split_refused(name, r)
                else why_link(name, at, layer, head, row, key),
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config=LINKS, key="ret_runs")
    if any(row["why"] is None for row in rows):
        st.caption("An empty score split: that run is too long for the Q, K, V walkthrough.")
    st.dataframe(s.table.head(10), hide_index=True, key="ret_means")


def forms(a: RetrievalResult | RetrievalSweep, b: RetrievalResult | RetrievalSweep) -> None:
    """Which heads retrieve under both prompt forms, and which under one only."""
    c = compare_forms(a, b)
    st.markdown(f"**Both prompts, {c.threshold:g} or more:** {_named(c.both)}")
    st.markdown(f"**The {c.first} prompt only:** {_named(c.only_first)}")
    st.markdown(f"**The {c.second} prompt only:** {_named(c.only_second)}")


def _named(heads: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(head_label(h) for h in heads) or "none"
