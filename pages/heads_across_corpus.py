"""Heads across a corpus: what each head does in general, from statistics over many sentences,
computed in the background (progress, Stop, partial results) and kept on disk."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

import viz_transformer as vt
from pages.sections.heads_across_corpus import corpus_grid as corpus_view
from viz_transformer.analysis.corpus.api import cache_folder
from viz_transformer.ui import caches, corpus_jobs, sidebar, widgets

WAS_RUNNING = "_corpus_was_running"


def heads_across_corpus_page() -> None:
    """Pick a corpus, run it (or read it back), then the grids, table, one head and its Q/K."""
    name, _ = sidebar.draw()
    widgets.page_header(
        table.title("heads_across_corpus"),
        "One sentence shows where a head looked once; whether it is a previous-token head, a "
        "sink or an aligning head is a statement about many sentences. Each statistic is a mean "
        "over a pattern's rows, per sentence, then over sentences weighted by their rows.",
        r"\text{entropy}=\frac{1}{q}\sum_{i}\Big(-\sum_j P_{ij}\log P_{ij}\Big),\quad "
        r"\text{prev\_token}=\operatorname{mean}_{i\ge 1} P_{i,i-1}",
    )
    sentences = corpus_view.corpus_picker()
    if sentences is None:
        return
    model = widgets.or_stop(caches.model, name)
    folder = cache_folder(model, sentences)
    job = corpus_jobs.job(folder)
    left, right, _ = st.columns([1, 1, 4])
    if left.button(
        "Run", type="primary", key="corpus_run", disabled=job is not None and job.running
    ):
        job = corpus_jobs.start(model, sentences, folder)
    if right.button("Stop", key="corpus_stop", disabled=job is None or not job.running) and job:
        job.stop.set()
    running = job is not None and job.running
    st.session_state[WAS_RUNNING] = running
    st.fragment(run_every=1.0 if running else None)(live)(name, sentences, folder)


def live(name: str, sentences: Sequence[str], folder: Path) -> None:
    """Progress of the run and the results so far; reruns every second while it runs."""
    job = corpus_jobs.job(folder)
    if job is not None and job.running:
        st.progress(job.progress.fraction, text=job.progress.text())
    elif st.session_state.get(WAS_RUNNING):
        st.rerun()  # finished or stopped: redraw the page once without the timer
    if job is not None and job.error:
        widgets.show_error(job.error)
    try:
        df = vt.read_corpus_stats(folder)
    except ValueError:  # no run yet
        df = None
    done = 0 if df is None else df["sentence_id"].nunique()
    corpus_view.progress_note(done, len(sentences), job)
    if df is None or done == 0:
        return
    kind, layer, head = corpus_view.results(name, df, sentences)
    st.subheader("Queries and keys of this head, together")
    corpus_view.qk_view(name, sentences, kind, layer, head)


heads_across_corpus_page()
