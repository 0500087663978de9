"""The caches of step-by-step decoding (section 3.1): beam search, greedy and seeded sampling
steps per model, sentence and options, shared by every session that asks the same question."""

from __future__ import annotations

import streamlit as st

from viz_transformer.analysis import decoding, sampling
from viz_transformer.ui import budget, estimates
from viz_transformer.ui.caches import architecture, model


def _fits(name: str, text: str, max_steps: int, beam: int) -> None:
    """Refuse a decoding that would not fit (``budget.TooLarge``, a ValueError), before it runs."""
    loaded = model(name)
    n = len(loaded.source_ids(text)[0])
    budget.require(
        f"Decoding {n:,} prompt tokens step by step",
        estimates.decode_bytes(architecture(name), n, max_steps, beam),
        loaded.device,
        "Shorten the sentence; the Attention maps page reads long inputs one head at a time.",
    )


@st.cache_data(max_entries=64, show_spinner="Decoding step by step…")
def decode_steps(name: str, text: str, beam: int, top_k: int, max_steps: int) -> decoding.Decoding:
    """Every step of the decoding (section 3.1), with its top-k next tokens and beams.

    Raises:
        budget.TooLarge: the decoding would not fit; nothing was computed.
    """
    _fits(name, text, max_steps, beam)
    found = decoding.decode_steps(model(name), text, max_steps, beam, top_k)
    budget.give_back()  # every step's key/value caches are garbage now
    return found


@st.cache_data(max_entries=64, show_spinner="Generating step by step…")
def sampled_steps(
    name: str,
    text: str,
    top_k: int,
    max_steps: int,
    chat: bool,
    temperature: float,
    sample_k: int,
    top_p: float,
    seed: int,
) -> decoding.Decoding:
    """Greedy or seeded sampled steps, over the chat prompt when ``chat`` (``sampling``)."""
    _fits(name, text, max_steps, 1)
    options = sampling.Sampling(temperature, sample_k, top_p, seed)
    return sampling.sample_steps(model(name), text, max_steps, options, top_k, chat)


@st.cache_data(max_entries=16, show_spinner=False)
def has_chat_template(name: str) -> bool:
    """Whether the model wraps a user message in a chat template of its own."""
    try:
        model(name).chat_prompt("x")
    except ValueError:
        return False
    return True
