"""One head's page over the corpus (``analysis.corpus.head_page``): its sentences across levels,
its five statistics among every head's (click a point to move to that head), and one pass over
sampled sentences for its token pairs and query-key distances, a stoppable job."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

import viz_transformer as vt
from viz_transformer.analysis.corpus import head_page
from viz_transformer.analysis.corpus.stats import STATS
from viz_transformer.figures import corpus_head as figures
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.kinds import AttentionKind, KindHead, kind_head_label
from viz_transformer.ui import caches, jobs, state, widgets

PASS = jobs.JobText(
    "Tracing sampled sentences (once for every head) for token pairs and distances…",
    "Stopped. Trace the sampled sentences again?",
    "Trace the sample",
    "corpus_head_pass",
)
STRIP_KEY = "corpus_head_strip"
NO_DISTANCE = (
    "No query-key distances for cross-attention: its queries are positions of the output and its "
    "keys positions of the source, two different sentences."
)


@st.cache_resource(show_spinner=False)
def _samples() -> BoundedCache:
    """Traces of a corpus's sample keyed by (model, sampled sentences), shared by every session;
    the first computation draws a progress bar and a Stop, every head after it reads them."""
    return BoundedCache(4)


def draw(
    name: str,
    df: pd.DataFrame,
    sentences: Sequence[str],
    picked: KindHead,
    stat: str,
    move: Callable[[KindHead], None],
) -> None:
    """The head page of ``picked`` (kind, layer, head); ``move`` is called with the head whose
    point the user clicked."""
    kind, layer, head = picked
    label = kind_head_label(picked)
    _levels(name, df, sentences, picked, stat)
    st.markdown(
        f"**{label} among every head**, one strip per statistic (click a point to open that head):"
    )
    beside = head_page.heads_beside(vt.head_summary(df), kind, layer, head)
    title = f"{label} (red diamond) and every head"
    widgets.chart(
        figures.heads_strip_figure(beside, STATS, title),
        "corpus-head-strip",
        key=STRIP_KEY,
        on_select=lambda: _clicked(move),
    )
    if (beside["kind"] == "cross").any():
        st.caption(
            f"{' and '.join(figures.SELF_ONLY)} compare positions of one sentence: "
            "cross-attention heads are not in those strips."
        )
    ids = head_page.sample_ids(len(sentences))
    sample = tuple(sentences[i] for i in ids)
    traces = jobs.stoppable(
        PASS,
        _samples(),
        (name, sample),
        lambda progress, stop: head_page.sample_traces(
            caches.model(name), sample, lambda d, t: progress(d / t), stop
        ),
    )
    if traces is None:
        return
    result = head_page.head_pass(traces, kind, layer, head)
    where = f"{label}, {result.sentences} sentences sampled evenly ({result.rows:,} query rows)"
    widgets.chart(
        figures.pairs_figure(result.pairs, f"Most attended token pairs: {where}"),
        "corpus-head-pairs",
    )
    if kind == "cross":  # query and key positions of two different sentences
        st.info(NO_DISTANCE)
        return
    widgets.chart(
        figures.distance_figure(result.offsets, result.mass, f"Distances: {where}"),
        "corpus-head-distances",
    )


# the levels in words: "strongest entropy" read as the most focused rows, but the highest entropy
# is the most diffuse
HEADINGS = {"strongest": "Highest", "middle": "Around the median", "weakest": "Lowest"}


def _levels(
    name: str, df: pd.DataFrame, sentences: Sequence[str], picked: KindHead, stat: str
) -> None:
    """Sentences at the head's highest, median and lowest ``stat``, each a link to its map."""
    kind, layer, head = picked
    examples = head_page.examples_by_level(df, kind, layer, head, stat)
    if examples.empty:
        st.info("No sentence has a value of this statistic for this head.")
        return
    cols = st.columns(len(head_page.LEVELS))
    for col, level in zip(cols, head_page.LEVELS, strict=True):
        part = examples[examples["level"] == level]
        lines = [
            f"1. `{v:.3f}` {_link(name, sentences[int(s)], kind, layer, head)}"
            for s, v in zip(part["sentence_id"], part["value"], strict=True)
        ]
        col.markdown(f"**{HEADINGS[level]} {stat}**\n\n" + "\n".join(lines))


def _link(name: str, text: str, kind: AttentionKind, layer: int, head: int) -> str:
    view = {"model": name, "sentence": text, "kind": kind, "layer": layer, "head": head}
    if widgets.presenting():  # the link opens a new tab, a new session: keep presenter mode
        view[state.PRESENTER_KEY] = "True"
    query = urllib.parse.urlencode(view)
    return f"[{widgets.literal(shortened(text))}](attention_maps?{query})"


def shortened(text: str, chars: int = 90) -> str:
    """``text`` cut to at most ``chars`` characters at a space, with an ellipsis when cut."""
    if len(text) <= chars:
        return text
    cut = text[: chars - 1].rsplit(" ", 1)[0] or text[: chars - 1]
    return cut.rstrip(" ,;:") + "…"


def _clicked(move: Callable[[KindHead], None]) -> None:
    """A click on a head's point in the strips: move the page to that head."""
    points = st.session_state.get(STRIP_KEY, {}).get("selection", {}).get("points", [])
    if points:
        kind, layer, head = points[0]["customdata"]
        move((kind, int(layer), int(head)))
