"""What heads do: which heads matter for this output (ablation, patching), what each one
passes on (value-weighted attention), what known roles they play, and the logit lens."""

from __future__ import annotations

import streamlit as st

from viz_transformer.records.kinds import KIND_TITLES
from viz_transformer.ui import caches, heads, sidebar, state, widgets


def what_heads_do_page() -> None:
    """Importance of every head, one head up close, a set ablated, roles, patching, lens."""
    name, text = sidebar.draw()
    widgets.page_header(
        "What heads do",
        "Where a head looks is not what it does. Ablating a head (its output z replaced by zeros "
        "or its mean) shows whether the output needs it; patching shows whether it carries the "
        "difference between two inputs; weighting attention by value norms shows what it moves.",
        r"\mathrm{MultiHead}(Q,K,V)=\mathrm{Concat}(z_1,\dots,z_h)W^O,\quad "
        r"z_i = \mathrm{softmax}\!\left(\frac{Q_iK_i^\top}{\sqrt{d_k}}\right)V_i",
    )
    spec = caches.spec(name)
    try:
        trace = caches.trace(name, text)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        st.stop()
    kinds = [k for k in spec.shows if trace.get(k) is not None]
    state.keep_choice("heads_kind", kinds)  # the URL may name a kind this model lacks
    state.keep_choice("heads_mode", ["zero", "mean"])
    left, right = st.columns([2, 1])
    kind = left.radio("Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True,
                      key="heads_kind")  # fmt: skip
    mode = right.radio("Ablation", ["zero", "mean"], horizontal=True, key="heads_mode",
                       help="zero: the head adds nothing; mean: its average z.")  # fmt: skip
    shape = caches.model(name).attention_shape(kind)
    state.clamp_state(heads_layer=shape[0], heads_head=shape[1])
    has_output = spec.shows[-1] != "encoder"
    st.subheader("Which heads matter")
    if has_output:
        heads.importance(name, text, kind, mode)
    else:
        st.info(f"{name} is an encoder only: it produces no output, so ablation changes none.")
    st.subheader("One head up close")
    heads.one_head(name, text, kind, shape, mode)
    if has_output:
        st.subheader("Ablate a set of heads together")
        heads.head_set(name, text, kind, shape, mode)
    st.subheader("Head roles")
    heads.roles(name, text, kind)
    if has_output:
        st.subheader("Activation patching")
        heads.patching(name, kind, spec.example)
        st.subheader("Logit lens")
        heads.lens(name, text)


what_heads_do_page()
