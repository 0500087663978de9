"""The decoder page's generation options: a "chat" toggle (the model's chat template) and
temperature / top-k / top-p sampling with a seed (greedy stays the default and reproducible)."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import decoding
from viz_transformer.ui import decode_caches, state, widgets

DEFAULTS = {"gen_chat": False, "gen_sample": False, "gen_temperature": 0.8, "gen_k": 50,
            "gen_top_p": 0.95, "gen_seed": 0}  # fmt: skip


def decode(name: str, text: str, beam: int, top_k: int, max_steps: int) -> decoding.Decoding:
    """The page's decoding: beam search or greedy (``decode_caches.decode_steps``), or, with chat or
    sampling on, one sampled (or greedy) token per step over the chat prompt; errors stop the
    page with one message."""
    state.keep_or_set(DEFAULTS)
    chat_ok = decode_caches.has_chat_template(name)
    left, right = st.columns(2)
    chat = left.toggle(
        "Chat",
        key="gen_chat",
        disabled=not chat_ok,
        help="Wrap the sentence as a user message in the model's chat template."
        if chat_ok
        else "This model has no chat template.",
    )
    why = "Draw each token at random (seeded) instead of the most likely."
    if beam > 1:
        why = "Sampling draws one sequence: set the beam width to 1."
    sample = right.toggle("Sample", key="gen_sample", disabled=beam > 1, help=why)
    if sample and beam == 1:
        cols = st.columns(4)
        temperature = cols[0].slider("Temperature", 0.05, 2.0, step=0.05, key="gen_temperature")
        sample_k = cols[1].slider("Sampling top-k (0: all)", 0, 200, key="gen_k")
        top_p = cols[2].slider("Top-p", 0.05, 1.0, step=0.05, key="gen_top_p")
        seed = cols[3].number_input("Seed", 0, 2**31 - 1, key="gen_seed")
        st.caption(
            f"Each token is drawn from softmax(logits / {temperature:g}), keeping the "
            f"{sample_k or 'all'} most likely tokens, then the smallest set holding {top_p:g} of "
            f"the probability; seed {int(seed)} makes the draw reproducible."
        )
    else:
        temperature, sample_k, top_p, seed = 0.0, 0, 1.0, 0
    chat = bool(chat and chat_ok)
    if not chat and not (sample and beam == 1):
        return widgets.or_stop(decode_caches.decode_steps, name, text, beam, top_k, max_steps)
    return widgets.or_stop(
        decode_caches.sampled_steps,
        name,
        text,
        top_k,
        max_steps,
        chat,
        float(temperature),
        int(sample_k),
        float(top_p),
        int(seed),
    )
