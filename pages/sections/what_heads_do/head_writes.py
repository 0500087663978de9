"""What the chosen head writes, on the "What heads do" page (pages/what_heads_do.py), private to
it: the head's output at one position read through the output layer (``analysis.writes``), the
tokens it pushes up and down beside the value-weighted map of where it reads."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import writes
from viz_transformer.figures import why as figures
from viz_transformer.records.kinds import AttentionKind, head_label
from viz_transformer.ui import caches, qkv_caches, state, widgets

TOP = 10  # tokens shown each way
INPUT_KEY = "_writes_input"  # the (model, text) the position was picked in


def section(name: str, text: str, kind: AttentionKind) -> None:
    """The chosen head's (``heads_layer``, ``heads_head``) direct logits at a chosen position,
    or why this model or kind has none."""
    st.markdown("**What this head writes** (direct logit attribution)")
    if kind == "encoder":
        st.info(
            "An encoder head writes into the encoder's output, which reaches the logits only "
            "through cross-attention; pick the decoder's or cross-attention heads to see tokens."
        )
        return
    layer, head = st.session_state["heads_layer"], st.session_state["heads_head"]
    try:
        cap = qkv_caches.capture(name, text, kind, layer)  # that layer alone
    except ValueError as exc:  # a model whose heads' outputs are not read: say why
        st.info(str(exc))
        return
    # a position belongs to its input: a new text (or model) starts at its own content position
    if st.session_state.get(INPUT_KEY, (name, text)) != (name, text):
        st.session_state.pop("writes_position", None)
    st.session_state[INPUT_KEY] = (name, text)
    tokens = cap.query_tokens
    predicted = caches.trace(name, text).pred_tokens
    named = _named_positions(tokens, predicted)
    state.keep_choice(
        "writes_position", range(len(tokens)), writes.content_position(tokens, predicted)
    )
    position = st.selectbox(
        "At position",
        range(len(tokens)),
        format_func=named.__getitem__,
        key="writes_position",
        help="The head's output z_h W^O_h at this position, read through "
        "the output layer: which next tokens it makes more (blue) or less (red) likely. The "
        "arrow names the token the model predicts there, as the maps label their rows.",
    )
    found = widgets.or_none(writes.writes_of, caches.model(name), cap, layer, head, position, TOP)
    if found is None:
        return
    fig = figures.writes_bars(
        found.promoted, found.suppressed, head_label((layer, head)), named[position]
    )
    widgets.chart(fig, f"writes-{kind}-L{layer}-H{head}-t{position}", key="writes_chart")
    st.caption(found.note)


def _named_positions(tokens: tuple[str, ...], predicted: tuple[str, ...]) -> list[str]:
    """``3: um → estudante``: each position's input token and the token predicted there (the
    logits this section splits predict the next token, and the maps label rows by it)."""
    if len(predicted) != len(tokens):
        return [f"{i}: {t}" for i, t in enumerate(tokens)]
    return [f"{i}: {t} → {p}" for i, (t, p) in enumerate(zip(tokens, predicted, strict=True))]
