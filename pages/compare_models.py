"""Compare two models: every head of model A against every head of model B on the same
sentences (Jensen-Shannon distance), matched one to one, and a run's heads over its checkpoints."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.compare_models import comparison as sections
from viz_transformer.ui import caches, compare_caches, sidebar, state, widgets

MODES = ("Two models", "Checkpoints of a training run")
OLD_MODES = {"Checkpoints of a live run": MODES[1]}  # what links made before the rename say


def compare_models_page() -> None:
    """Pick two models (pairs that work first) or a run, then distances, matches and maps."""
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("compare_models"),
        "Head indices do not line up between two trainings, so “head 3 against head 3” is wrong."
        " Every head of A is compared with every head of B on the same sentences (the mean "
        "Jensen-Shannon distance of their attention rows, 0 = same, 1 = disjoint) and the heads "
        "are matched one to one with the least total distance (Hungarian method).",
        r"\mathrm{JS}(p,q)=\sqrt{H\!\left(\tfrac{p+q}{2}\right)-\tfrac{H(p)+H(q)}{2}},\quad "
        r"H(p)=-\sum_k p_k\log_2 p_k",
    )
    mode = st.session_state.get("cmp_mode")
    st.session_state["cmp_mode"] = OLD_MODES.get(mode, mode)
    state.keep_choice("cmp_mode", list(MODES))
    top = st.columns([3, 2])  # compact: on a projector the first chart starts on the first screen
    mode = top[0].segmented_control("Compare", MODES, key="cmp_mode") or MODES[0]
    runs = sections.checkpoint_runs()
    if mode == MODES[1]:
        runs = sections.runs_or_note()
        if runs:
            sections.drift_view(runs)
        state.write_url()  # defaults chosen in this run go into the link too
        return
    offered = sections.pairs(runs)
    if "cmp_a" not in st.session_state:  # the first pair that works, else the sidebar's model
        st.session_state["cmp_a"], st.session_state["cmp_b"] = next(
            iter(offered.values()), (name, name)
        )
    models = sections.model_choices(offered)
    top[1].selectbox(
        "Pairs that work",
        list(offered),
        index=None,
        key="cmp_offer",
        placeholder="Pick a pair…",
        on_change=sections.use_pair,
        args=(offered,),
    )
    left, middle, right = st.columns(3)
    a = left.selectbox("Model A", models, key="cmp_a", format_func=sections.short)
    b = middle.selectbox(
        "Model B", models, key="cmp_b", format_func=lambda n: sections.marked(n, a)
    )
    sections.check_tokenizers(a, b)  # before either model loads (a conversion takes seconds)
    specs = [widgets.or_stop(caches.spec, n) for n in (a, b)]
    shows = [k for k in specs[0].shows if k in specs[1].shows]
    if not shows:
        st.error(f"{a} and {b} share no attention kind: pick two models that do.")
        st.stop()
    kind = sections.kind_picker(shows, right)
    if "cmp_text" not in st.session_state:
        st.session_state["cmp_text"] = sections.default_text(a, text)
    lines = sections.sentences_of(sections.sentence_box("cmp_text"))
    if not lines:
        st.info("Type at least one sentence both models can read.")
        st.stop()
    result = widgets.or_stop(compare_caches.compare, a, b, lines, kind)
    sections.two_models(result)
    state.write_url()


compare_models_page()
