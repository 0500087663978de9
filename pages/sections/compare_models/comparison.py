"""The sections of the "Compare two models" page (pages/compare_models.py), private to it (kept
out of pages/ itself, whose every file Streamlit would list as a page): which
pairs to offer, the two-model comparison, and the drift of a training run's checkpoints."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

import viz_transformer as vt
from viz_transformer.analysis.comparison.distances import HeadMatch, peak_agreement
from viz_transformer.analysis.comparison.tracing import patterns
from viz_transformer.figures import compare as figures
from viz_transformer.models.checkpoints import CheckpointRun, checkpoint_runs
from viz_transformer.records.kinds import KIND_SHORT, KIND_TITLES, AttentionKind, head_label
from viz_transformer.settings import CHECKPOINTS_DIR
from viz_transformer.training.en_pt.everyday import EVERYDAY
from viz_transformer.ui import caches, compare_caches, state, widgets

SAME = 0.1  # a matched pair closer than this reads as "the same head"
SAME_PEAKS = 0.8  # a farther pair whose peaks agree on 4 rows in 5 reads as "the same focus"
MAX_SENTENCES = 20  # more would keep a classroom server busy for seconds per view


def short(name: str) -> str:
    """A checkpoint's name as a picker shows it: ``reverse-20261125-1412/scaled/step-000200``."""
    prefix = f"paper:{CHECKPOINTS_DIR.resolve()}/"
    return name.removeprefix(prefix) if name.startswith(prefix) else name


def pairs(runs: list[CheckpointRun]) -> dict[str, tuple[str, str]]:
    """Pairs whose difference is the lesson, labelled: a distilled model and its teacher, a live
    run with and without 1/sqrt(d_k), a run's first and last checkpoint."""
    out = {}
    for name in vt.available_models():
        teacher = caches.spec(name).teacher
        if teacher in vt.available_models():
            out[f"{name} and its teacher {teacher}"] = (name, teacher)
    by_run: dict[str, dict[str, CheckpointRun]] = {}
    for run in runs:
        by_run.setdefault(run.run, {})[run.variant] = run
    for name, variants in by_run.items():
        if {"scaled", "unscaled"} <= set(variants):
            twins = variants["scaled"].names[-1], variants["unscaled"].names[-1]
            out[f"{name}: with and without 1/√d_k (its unscaled twin)"] = twins
        for variant, run in variants.items():
            if len(run.names) > 1:
                out[f"{name} ({variant}): first and last checkpoint"] = run.names[0], run.names[-1]
    return out


def model_choices(offered: dict[str, tuple[str, str]]) -> list[str]:
    """What Model A and Model B offer: the pairs' models, the registry's, the Hugging Face
    models this session added in the sidebar, and any model a link names (a checkpoint)."""
    extra = st.session_state.get(state.EXTRA_KEY, [])
    named = [st.session_state.get(key) for key in ("cmp_a", "cmp_b")]
    found = [*(n for pair in offered.values() for n in pair), *vt.available_models(), *extra]
    return list(dict.fromkeys([*found, *(n for n in named if isinstance(n, str))]))


def same_tokenizer(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` read text with the same vocabulary (True when unknown)."""
    key_a, key_b = compare_caches.tokenizer(a), compare_caches.tokenizer(b)
    return key_a is None or key_b is None or key_a == key_b


def marked(name: str, a: str) -> str:
    """An entry of Model B: the short name, marked when its tokenizer is not A's."""
    return short(name) if same_tokenizer(a, name) else f"{short(name)} · another tokenizer than A"


def check_tokenizers(a: str, b: str) -> None:
    """A warning, and a stop unless the user insists, when ``a`` and ``b`` tokenize differently:
    known from their vocabulary files, before either model loads."""
    if same_tokenizer(a, b):
        return
    st.warning(
        f"{short(a)} and {short(b)} read text with different tokenizers (their vocabulary files "
        "differ), so their tokens, and so their maps, almost never line up one to one. Pick a "
        "Model B not marked “another tokenizer”, or a pair that works."
    )
    if not st.toggle("Compare them anyway", key="cmp_anyway"):
        st.stop()


def use_pair(offered: dict[str, tuple[str, str]]) -> None:
    """Callback of the pair picker: its two models become A and B."""
    chosen = offered.get(st.session_state.get("cmp_offer", ""))
    if chosen:
        st.session_state["cmp_a"], st.session_state["cmp_b"] = chosen


def default_text(name: str, sentence: str) -> str:
    """Pre-filled sentences: the model's example, the sidebar's sentence, and everyday English
    sentences for a model that reads English."""
    spec = caches.spec(name)
    lines = [spec.example, sentence, *(EVERYDAY[:4] if spec.source_lang == "en" else ())]
    return "\n".join(dict.fromkeys(line.strip() for line in lines if line.strip()))


def sentences_of(text: str) -> tuple[str, ...]:
    """The non-empty lines of ``text``, at most ``MAX_SENTENCES`` (a note says so)."""
    lines = tuple(line.strip() for line in text.splitlines() if line.strip())
    if len(lines) > MAX_SENTENCES:
        st.info(f"The first {MAX_SENTENCES} of {len(lines)} sentences are compared.")
    return lines[:MAX_SENTENCES]


def kind_picker(shows: list[AttentionKind], where: DeltaGenerator | None = None) -> AttentionKind:
    """The attention kind, among those ``shows`` lists (URL key ``cmp_kind``), in the column
    ``where`` (one below the other there) or across the page."""
    state.keep_choice("cmp_kind", shows)
    return (where or st).radio(
        "Attention kind",
        shows,
        format_func=(KIND_SHORT if where else KIND_TITLES).get,
        horizontal=where is None,
        key="cmp_kind",
    )


def sentence_box(key: str) -> str:
    """The sentences compared, one per line, in a folded box that says how many there are:
    the charts, not the text, fill a projector's first screen."""
    count = len([line for line in st.session_state.get(key, "").splitlines() if line.strip()])
    with st.expander(f"Sentences compared ({count}): edit", expanded=count == 0):
        return st.text_area("Sentences, one per line", key=key)


def verdict(m: HeadMatch, peaks: float) -> str:
    """How the table reads a matched pair: the same head, the same focus at another sharpness
    (its peaks agree on ``peaks`` of the rows: cross-attention heads that align the same words
    differ mostly in how sharply), or changed; each "in place" or "moved"."""
    place = "same place" if m.a == m.b else "different place"
    if m.distance < SAME:
        return f"same head, {place}"
    if peaks >= SAME_PEAKS:
        return f"same focus, other sharpness, {place}"
    return "changed"


def two_models(result: vt.Comparison) -> None:
    """Distance heatmap, matched pairs by distance, and a chosen pair's maps and difference."""
    widgets.chart(
        figures.distance_figure(
            result.distance, short(result.model_a), short(result.model_b), result.matching
        ),
        "compare-distance",
    )
    ranked = sorted(result.matching, key=lambda m: m.distance)
    maps = (patterns(result.traces_a, result.kind), patterns(result.traces_b, result.kind))
    peaks = [peak_agreement(*maps, m) for m in ranked]
    table = pd.DataFrame(
        {
            "A head": [head_label(m.a) for m in ranked],
            "B head": [head_label(m.b) for m in ranked],
            "JS distance": [round(m.distance, 5) for m in ranked],
            "peaks agree": [f"{p:.0%}" for p in peaks],
            "reads as": [verdict(m, p) for m, p in zip(ranked, peaks, strict=True)],
        }
    )
    st.dataframe(table, hide_index=True, height=min(400, 36 * len(ranked) + 40))
    state.clamp_state(cmp_pair=len(ranked), cmp_sentence=len(result.sentences))
    left, right = st.columns(2)
    pair = left.selectbox(
        "Matched pair",
        range(len(ranked)),
        key="cmp_pair",
        format_func=lambda i: (
            f"A {head_label(ranked[i].a)} ↔ B {head_label(ranked[i].b)} ({ranked[i].distance:.4f})"
        ),
    )
    i = right.selectbox(
        "Sentence",
        range(len(result.sentences)),
        key="cmp_sentence",
        format_func=lambda j: result.sentences[j],
    )
    fig = figures.pair_figure(result.traces_a[i], result.traces_b[i], result.kind, ranked[pair])
    widgets.chart(fig, "compare-pair")
    meta = {
        "model_a": result.model_a,
        "model_b": result.model_b,
        "kind": result.kind,
        "sentences": list(result.sentences),
    }
    widgets.downloads(f"compare-{result.kind}", {"distance": result.distance}, meta)


def pick_head(n_lines: int) -> None:
    """Callback of the drift chart: the clicked line's head becomes the chosen head. The chart
    draws one line per head of every layer (``n_lines`` = layers * heads), line i for the flat
    head i = layer * heads + head, the index the head picker uses."""
    points = st.session_state["cmp_drift_chart"].selection.get("points", [])
    if points:
        st.session_state["cmp_head"] = int(points[0]["curve_number"]) % n_lines


def drift_view(runs: list[CheckpointRun]) -> None:
    """A run's drift chart, and one head at each checkpoint."""
    keys = [f"{r.run}/{r.variant}" for r in runs]
    state.keep_choice("cmp_run", keys)
    key = st.selectbox("Run", keys, key="cmp_run", format_func=lambda k: runs[keys.index(k)].label)
    run = runs[keys.index(key)]
    kind = kind_picker(list(caches.spec(run.names[-1]).shows))
    if not st.session_state.get("cmp_run_text"):
        st.session_state["cmp_run_text"] = caches.spec(run.names[-1]).example
    lines = sentences_of(sentence_box("cmp_run_text"))
    if not lines:
        st.info("Type at least one sentence the run's task can read.")
        st.stop()
    result = widgets.or_stop(compare_caches.drift, run.names, lines, kind)
    drift, traces = result.distance, result.traces
    _, n_layers, n_heads = drift.shape
    state.clamp_state(cmp_head=n_layers * n_heads, cmp_sentence=len(lines))
    fig = figures.drift_figure(drift, run.steps, st.session_state.get("cmp_head"))
    widgets.chart(
        fig, "compare-drift", key="cmp_drift_chart", on_select=lambda: pick_head(n_layers * n_heads)
    )
    left, right = st.columns(2)
    head = left.selectbox(
        "Head",
        range(n_layers * n_heads),
        key="cmp_head",
        format_func=lambda f: head_label(divmod(f, n_heads)),
    )
    i = right.selectbox(
        "Sentence", range(len(lines)), key="cmp_sentence", format_func=lambda j: lines[j]
    )
    shown = [t[i] for t in traces]
    widgets.chart(
        figures.checkpoint_maps(shown, run.steps, kind, divmod(head, n_heads)),
        "compare-checkpoints",
    )


def runs_or_note() -> list[CheckpointRun]:
    """The saved runs, or a note on how to make one (and an empty list)."""
    runs = checkpoint_runs()
    if not runs:
        st.info(
            "No training run has saved checkpoints yet: start one on *Watch it learn*, or "
            "train a model (`python -m viz_transformer.training.tasks.train --task reverse`); "
            "each run keeps its checkpoints here (newest 5 runs of each)."
        )
        st.page_link("pages/watch_it_learn.py", label="Watch it learn", icon=":material/school:")
    return runs
