"""What the "Heads across a corpus" page draws from a table of corpus statistics: a layers x
heads grid per kind, a sortable table of heads, one head's distribution and its page
(``corpus_head``: sentences across levels, linked to Attention maps; the head among all; its token
pairs and distances), and the joint query/key view of that head."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

import viz_transformer as vt
from pages.sections.heads_across_corpus import corpus_head
from viz_transformer.analysis.corpus import qk as corpus_qk
from viz_transformer.analysis.corpus import tables
from viz_transformer.analysis.corpus.stats import STATS
from viz_transformer.figures import corpus as figures
from viz_transformer.figures.heads import head_grid
from viz_transformer.records.kinds import (
    KIND_SHORT,
    KIND_TITLES,
    AttentionKind,
    KindHead,
    kind_head_label,
)
from viz_transformer.text import corpora, uploads
from viz_transformer.ui import caches, choice, head_caches, jobs, state, widgets
from viz_transformer.ui.corpus_jobs import BATCH, CorpusJob

MEANING = {
    "entropy": "how spread a row is (0: one key; high: uniform)",
    "max_weight": "the largest weight of a row, on average",
    "first_token": "weight on the first key (a sink)",
    "prev_token": "weight on the previous position",
    "diagonal": "weight on the same position",
}
SOURCES = ["built-in", "upload"]
QK_SENTENCES = 400  # sentences the query/key view traces, at most (and 3,000 points)
QK_JOB = jobs.JobText(
    "Tracing queries and keys…",
    "The queries and keys view stopped; start it again?",
    "Trace queries and keys",
    "qk",
)


def corpus_picker() -> Sequence[str] | None:
    """The built-in corpus or the sentences of an uploaded .txt file (today's upload limits);
    which of the two is in the URL (``corpus_source``), an upload's lines are not."""
    state.keep_choice("corpus_source", SOURCES)
    source = st.radio(
        "Corpus",
        SOURCES,
        horizontal=True,
        key="corpus_source",
        format_func={
            "built-in": corpora.BUILTIN["english-heldout-1000"],
            "upload": "an uploaded .txt file",
        }.get,
    )
    if source == "built-in":
        return corpora.builtin_sentences()
    limit = choice.upload_limit()
    file = st.file_uploader(
        f"One sentence per line ({limit})",
        type=["txt"],
        key="corpus_upload",
        help=choice.UPLOAD_HELP,
    )
    if file is None:
        st.info(
            f"Upload a .txt file with one sentence per line, {limit}: the browser refuses a "
            "larger file (a red “!” beside its name)."
        )
        return None
    try:
        upload = uploads.read_lines(file.getvalue(), file.name)
    except ValueError as exc:
        widgets.show_error(exc)
        return None
    for note in upload.notes:
        st.caption(note)
    return upload.lines


def progress_note(done: int, total: int, job: CorpusJob | None) -> None:
    """What the statistics below cover while a run goes on, after a Stop, or once complete:
    every finished batch is a shard on disk, so a stopped run keeps them and Run resumes
    (nothing when a run failed before any batch: its error says why)."""
    running = job is not None and job.running
    if job is not None and job.error and done == 0:
        return
    if running and done == 0:
        st.info(
            f"The first batch ({BATCH} sentences) is being computed; its statistics appear "
            "here as soon as it finishes."
        )
    elif running:
        st.caption(
            f"So far: the statistics of the {done:,} sentences finished (batches of "
            f"{BATCH}); they grow as each batch finishes."
        )
    elif done == 0:
        st.info(f"Press Run to compute every head's statistics on {total:,} sentences.")
    elif done < total:
        st.info(
            f"Stopped after {done:,} of {total:,} sentences: below are their statistics, "
            f"kept on disk. Run goes on from sentence {done + 1:,}."
        )


def results(
    name: str, df: pd.DataFrame, sentences: Sequence[str]
) -> tuple[AttentionKind, int, int]:
    """Grids (one kind per row, full width), table, and the chosen head's distribution and top
    sentences; the statistic and the head are in the URL (``corpus_stat``, ``corpus_head``).

    Returns:
        The selected head (kind, layer, head).
    """
    summary = vt.head_summary(df)
    kinds = tables.kinds_in(summary)
    state.keep_choice("corpus_stat", list(STATS))
    stat = st.selectbox(
        "Statistic", STATS, key="corpus_stat", format_func=lambda s: f"{s}: {MEANING[s]}"
    )
    for kind in kinds:  # full width each: every head labelled, numbers legible
        grid = tables.stat_grid(summary, kind, stat)
        widgets.chart(head_grid(grid, KIND_TITLES[kind], stat), f"corpus-{kind}-{stat}")
    st.subheader("Heads sorted by " + stat)
    ranked = tables.ranked_heads(summary, stat)
    table = ranked.assign(kind=ranked["kind"].map(KIND_SHORT))
    key = f"corpus_table_{stat}"  # a new sort starts with no row picked
    st.dataframe(
        table,
        key=key,
        on_select=lambda: _pick(ranked, key),
        selection_mode="single-row",
        hide_index=True,
        column_config={s: st.column_config.NumberColumn(format="%.3f") for s in STATS},
    )
    kind, layer, head = _chosen(ranked)
    state.write_url()  # the statistic and head chosen in this run go into the link too
    st.caption(f"Showing {kind_head_label((kind, layer, head))}: click a row to pick another.")
    one_head(df, kind, layer, head, stat)
    corpus_head.draw(name, df, sentences, (kind, layer, head), stat, move_to)
    return kind, layer, head


def _pick(ranked: pd.DataFrame, key: str) -> None:
    """Callback of the table: the clicked row's head becomes ``corpus_head``."""
    rows = st.session_state[key].selection.rows
    if rows:
        row = ranked.iloc[rows[0]]
        move_to((row["kind"], int(row["layer"]), int(row["head"])))


def _chosen(ranked: pd.DataFrame) -> KindHead:
    """The head in ``corpus_head`` (a click or a link) when the table has it, else its first."""
    heads = [
        (str(k), int(la), int(h))
        for k, la, h in ranked[["kind", "layer", "head"]].itertuples(index=False)
    ]
    wanted = str(st.session_state.get("corpus_head", "")).split("/")
    picked = next((h for h in heads if [h[0], str(h[1]), str(h[2])] == wanted), heads[0])
    st.session_state["corpus_head"] = "/".join(map(str, picked))
    return picked  # type: ignore[return-value]


def one_head(df: pd.DataFrame, kind: AttentionKind, layer: int, head: int, stat: str) -> None:
    """The head's distribution of ``stat`` over the sentences (its page follows it)."""
    label = kind_head_label((kind, layer, head))
    st.subheader(f"{label}: {stat} per sentence")
    rows = tables.head_rows(df, kind, layer, head)
    widgets.chart(figures.stat_distribution(rows[stat].to_numpy(), stat, label), "corpus-dist")


def move_to(picked: KindHead) -> None:
    """Make ``picked`` the chosen head (a click on its point in the head page's strips)."""
    st.session_state["corpus_head"] = "/".join(map(str, picked))


def qk_view(
    name: str, sentences: Sequence[str], kind: AttentionKind, layer: int, head: int
) -> None:
    """The joint query/key scatter of one head over the first sentences, on demand."""
    left, mid, right = st.columns(3)
    method = left.radio(
        "Projection",
        corpus_qk.projections(),
        horizontal=True,
        key="qk_method",
        help="UMAP is offered when umap-learn is installed.",
    )
    color = mid.radio("Colour by", ["role", "position", "token"], horizontal=True, key="qk_color")
    if not right.toggle("Show", key="qk_show", help="Traces up to 3,000 query and key vectors."):
        return
    first = tuple(sentences[:QK_SENTENCES])
    points = jobs.stoppable(
        QK_JOB,
        head_caches.qk_store(),
        (name, first, kind, layer, head, method),
        lambda progress, stop: corpus_qk.qk_points(
            caches.model(name), first, kind, layer, head, method, progress=progress, stop=stop
        ),
    )
    if points is None:
        return
    title = f"Queries and keys of {kind_head_label((kind, layer, head))} ({method})"
    widgets.chart(figures.qk_scatter(points, color, title), "corpus-qk")
