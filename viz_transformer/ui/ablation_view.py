"""What heads do, the effect of an ablation: each output token's probability with and without
the heads, "ablate the top k", a searched sentence where one head changes the output, and the
cap on the input's length."""

from __future__ import annotations

import numpy as np
import streamlit as st

from viz_transformer.analysis.effects import Demo, TokenEffect, top_heads
from viz_transformer.figures import heads as figures
from viz_transformer.records.kinds import AttentionKind, KindHead, head_label
from viz_transformer.ui import head_caches, state, widgets

Heads = tuple[KindHead, ...]


def capped(name: str, text: str) -> str:
    """``text`` within ``HEADS_MAX_TOKENS`` source tokens, saying so when it was cut."""
    short, total = widgets.or_stop(head_caches.capped_text, name, text)
    if short != text:
        st.warning(
            f"What heads do reads the first {head_caches.HEADS_MAX_TOKENS} of the input's "
            f"{total:,} tokens (up to “…{widgets.literal(short[-40:])}”): ablating every head "
            "runs a copy of the model per head, and the whole input would need many gigabytes. "
            "The other pages read all of it."
        )
    return short


def effect(result: TokenEffect, heads: Heads, mode: str) -> None:
    """Each token of the normal output: its log-probability (and probability) normally and with
    ``heads`` ablated, the tokens that lost most in red, and one line that says the most."""
    if not result.tokens:
        return
    hurt = result.most_hurt()
    what = f"{len(heads)} head{'s' * (len(heads) != 1)} ablated ({mode})"
    fig = figures.token_effect_figure(result.tokens, result.normal, result.ablated, hurt, what)
    widgets.chart(fig, "ablation-token-effect")
    total = float(result.drop.sum())
    if hurt:
        worst = hurt[0]
        before, after = np.exp(result.normal[worst]), np.exp(result.ablated[worst])
        token = widgets.literal(result.tokens[worst])
        st.caption(
            f"Without the head(s) the whole output lost {total:.2f} nats; **{token}** lost most: "
            f"its probability fell from {before:.0%} to {after:.0%}."
        )
    else:
        st.caption(f"No token lost more than 0.05 nats (the whole output: {total:+.2f} nats).")


def top_k(kind: AttentionKind, scores: np.ndarray | None) -> Heads | None:
    """A slider "ablate the top k heads" over the importance map; the heads it picks, or None
    (no importance map yet)."""
    if scores is None:
        return None
    most = min(12, scores.size)
    k = st.slider(
        "Ablate the top k heads (by importance) together",
        1,
        most,
        min(3, most),
        key="heads_top_k",
        help="The heads whose loss hurts the output most, "
        "ablated at once: a teacher can raise k until the output breaks.",
    )
    return top_heads(scores, k, kind)


def _use_demo(demo: Demo) -> None:
    """Callback: the demo's sentence in the sidebar, its kind, head and mode picked."""
    st.session_state[state.TEXT_KEY] = demo.text
    layer, head = demo.heads[0]
    st.session_state.update(
        heads_kind=demo.kind, heads_layer=layer, heads_head=head, heads_mode=demo.mode
    )


def demo_offer(name: str, text: str) -> None:
    """A button that loads the searched sentence where one head changes ``name``'s output."""
    demo = head_caches.demo(name)
    if demo is None or demo.text == text:
        return
    st.button(
        f"Try: one head changes the output ({head_label(demo.heads[0])} on “{demo.text}”)",
        icon=":material/science:",
        key="heads_demo",
        on_click=_use_demo,
        args=(demo,),
        help=f"Found by bench/ablation_demo.py: {demo.normal} → {demo.ablated}",
    )
