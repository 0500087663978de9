"""What heads do: which heads matter for this output (ablation, patching), what each one
passes on (value-weighted attention), what known roles they play, and the logit lens."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.what_heads_do import experiments as sections
from pages.sections.what_heads_do import head_writes, retrieval
from viz_transformer.records.kinds import KIND_TITLES
from viz_transformer.ui import ablation_view, caches, sidebar, state, widgets


def what_heads_do_page() -> None:
    """Importance of every head, one head up close, a set ablated, roles, patching, lens,
    retrieval heads."""
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("what_heads_do"),
        "Where a head looks is not what it does. Ablating a head (its output z replaced by zeros "
        "or its mean) shows whether the output needs it; patching shows whether it carries the "
        "difference between two inputs; weighting attention by value norms shows what it moves.",
        r"\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(z_1,\dots,z_h)W^O,\quad "
        r"z_i = \mathrm{softmax}\!\left(\frac{Q_iK_i^\top}{\sqrt{d_k}}\right)V_i",
    )
    text = ablation_view.capped(name, text)  # bounded memory: 256 tokens at most
    trace = widgets.or_stop(caches.trace, name, text)
    facts = caches.model(name).facts
    kinds = [k for k in facts.kinds if trace.get(k) is not None]
    state.keep_choice("heads_kind", kinds)  # the URL may name a kind this model lacks
    state.keep_choice("heads_mode", ["zero", "mean"])
    left, right = st.columns([2, 1])
    kind = left.radio(
        "Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True, key="heads_kind"
    )
    mode = right.radio(
        "Ablation",
        ["zero", "mean"],
        horizontal=True,
        key="heads_mode",
        help="zero: the head adds nothing; mean: its average z.",
    )
    shape = facts.shape(kind)
    state.clamp_state(heads_layer=shape[0], heads_head=shape[1])
    has_output = facts.has_decoder
    st.subheader("Which heads matter")
    scores = None
    if has_output:
        ablation_view.demo_offer(name, text)
        scores = sections.importance(name, text, kind, mode)
    else:
        st.info(f"{name} is an encoder only: it produces no output, so ablation changes none.")
    st.subheader("One head up close")
    sections.one_head(name, text, kind, shape, mode)
    head_writes.section(name, text, kind)
    if has_output:
        st.subheader("Ablate a set of heads together")
        sections.head_set(name, text, kind, shape, mode, scores)
    st.subheader("Head roles")
    sections.roles(name, text, kind)
    if has_output:
        st.subheader("Activation patching")
        sections.patching(name, kind, facts.patch_pair)
        st.subheader("Logit lens")
        sections.lens(name, text)
    st.subheader("Retrieval heads")
    retrieval.section(name)


what_heads_do_page()
