"""What the "Heads across a corpus" page draws from a table of corpus statistics: a layers x
heads grid per kind, a sortable table of heads, one head's distribution and top sentences (links
to the Attention maps page), and the joint query/key view of that head."""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

import pandas as pd
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis.corpus import qk as corpus_qk
from viz_transformer.analysis.corpus import tables
from viz_transformer.analysis.corpus.stats import STATS
from viz_transformer.figures import corpus as figures
from viz_transformer.figures.heads import head_grid
from viz_transformer.records.kinds import KIND_SHORT, KIND_TITLES, AttentionKind
from viz_transformer.text import corpora, uploads
from viz_transformer.ui import caches, widgets

MEANING = {
    "entropy": "how spread a row is (0: one key; high: uniform)",
    "max_weight": "the largest weight of a row, on average",
    "first_token": "weight on the first key (a sink)",
    "prev_token": "weight on the previous position",
    "diagonal": "weight on the same position",
}
TOP = 8  # sentences listed for a head


def corpus_picker() -> Sequence[str] | None:
    """The built-in corpus or the sentences of an uploaded .txt file (today's upload limits)."""
    source = st.radio("Corpus", ["built-in", "upload"], horizontal=True, key="corpus_source",
                      format_func={"built-in": corpora.BUILTIN["english-heldout-1000"],
                                   "upload": "an uploaded .txt file"}.get)  # fmt: skip
    if source == "built-in":
        return corpora.builtin_sentences()
    file = st.file_uploader("One sentence per line", type=["txt"], key="corpus_upload")
    if file is None:
        st.info("Upload a .txt file with one sentence per line.")
        return None
    try:
        upload = uploads.read_lines(file.getvalue(), file.name)
    except ValueError as exc:
        widgets.show_error(exc)
        return None
    for note in upload.notes:
        st.caption(note)
    return upload.lines


def results(
    name: str, df: pd.DataFrame, sentences: Sequence[str]
) -> tuple[AttentionKind, int, int]:
    """Grids, table, and the selected head's distribution and top sentences.

    Returns:
        The selected head (kind, layer, head).
    """
    summary = vt.head_summary(df)
    kinds = tables.kinds_in(summary)
    stat = st.selectbox("Statistic", STATS, key="corpus_stat",
                        format_func=lambda s: f"{s}: {MEANING[s]}")  # fmt: skip
    cols = st.columns(len(kinds))
    for col, kind in zip(cols, kinds, strict=True):
        grid = tables.stat_grid(summary, kind, stat)
        with col:
            widgets.chart(head_grid(grid, KIND_TITLES[kind], stat), f"corpus-{kind}-{stat}")
    st.subheader("Heads sorted by " + stat)
    ranked = tables.ranked_heads(summary, stat)
    table = ranked.assign(kind=ranked["kind"].map(KIND_SHORT))
    picked = st.dataframe(table, key="corpus_table", on_select="rerun",
                          selection_mode="single-row", hide_index=True,
                          column_config={s: st.column_config.NumberColumn(format="%.3f")
                                         for s in STATS})  # fmt: skip
    rows = picked.selection.rows if picked is not None else []
    row = ranked.iloc[rows[0] if rows else 0]
    kind: AttentionKind = row["kind"]
    st.caption("Click a row to pick a head; the first row is picked until then.")
    layer, head = int(row["layer"]), int(row["head"])
    one_head(name, df, sentences, kind, layer, head, stat)
    return kind, layer, head


def one_head(name: str, df: pd.DataFrame, sentences: Sequence[str], kind: AttentionKind,
             layer: int, head: int, stat: str) -> None:  # fmt: skip
    """The head's distribution over sentences and its top sentences, each a link."""
    label = f"{KIND_SHORT[kind]} L{layer} H{head}"
    st.subheader(f"{label}: {stat} per sentence")
    rows = tables.head_rows(df, kind, layer, head)
    widgets.chart(figures.stat_distribution(rows[stat].to_numpy(), stat, label), "corpus-dist")
    top = tables.top_sentences(rows, stat, TOP)
    st.markdown(f"**Highest {stat}** (each opens the Attention maps page on that head):")
    lines = []
    for sid, value in zip(top["sentence_id"], top["value"], strict=True):
        text = sentences[int(sid)]
        query = urllib.parse.urlencode({"model": name, "sentence": text, "kind": kind,
                                        "layer": layer, "head": head})  # fmt: skip
        shown = widgets.literal(text[:120])
        lines.append(f"1. `{value:.3f}` [{shown}](attention_maps?{query})")
    st.markdown("\n".join(lines) if lines else "No sentence has a value for this statistic.")


def qk_view(name: str, sentences: Sequence[str], kind: AttentionKind, layer: int,
            head: int) -> None:  # fmt: skip
    """The joint query/key scatter of one head over the first sentences, on demand."""
    left, mid, right = st.columns(3)
    method = left.radio("Projection", corpus_qk.projections(), horizontal=True, key="qk_method",
                        help="UMAP is offered when umap-learn is installed.")  # fmt: skip
    color = mid.radio("Colour by", ["role", "position", "token"], horizontal=True, key="qk_color")
    if not right.toggle("Show", key="qk_show", help="Traces up to 3,000 query and key vectors."):
        return
    points = widgets.or_none(_qk_points, name, tuple(sentences[:400]), kind, layer, head, method)
    if points is None:
        return
    title = f"Queries and keys of {KIND_SHORT[kind]} L{layer} H{head} ({method})"
    widgets.chart(figures.qk_scatter(points, color, title), "corpus-qk")


@st.cache_data(max_entries=8, show_spinner="Tracing queries and keys…")
def _qk_points(name: str, sentences: tuple[str, ...], kind: AttentionKind, layer: int, head: int,
               method: corpus_qk.Projection) -> pd.DataFrame:  # fmt: skip
    return corpus_qk.qk_points(caches.model(name), sentences, kind, layer, head, method)
