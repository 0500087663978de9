"""Step-by-step decoder: the encoder runs once, then one output token per step (section 3.1)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.decoder_steps import generation
from pages.sections.decoder_steps import step_view as decoder_view
from viz_transformer.analysis import decoding
from viz_transformer.figures import attention
from viz_transformer.figures import decoder as figures
from viz_transformer.ui import caches, decode_caches, input_notes, sidebar, state, switch, widgets


def teacher_forcing(name: str, text: str, start_len: int, top_k: int, max_steps: int) -> None:
    """A reference output fed in one parallel pass, aligned with the model's greedy output."""
    st.subheader("Teacher forcing")
    reference = st.text_input("Reference output", key="target", placeholder="a correct output")
    if not reference.strip():
        return
    try:
        forced = caches.trace(name, text, reference)
    except widgets.LOAD_ERRORS as exc:
        widgets.show_error(exc)
        return
    greedy = decode_caches.decode_steps(name, text, 1, top_k, max_steps)
    aligned = decoding.align(greedy.output_tokens, decoding.reference_tokens(forced, start_len))
    st.markdown(
        f"Training feeds the reference instead of the model's own outputs: all "
        f"{len(forced.tgt_tokens)} decoder positions run in **one parallel pass** under the "
        "causal mask, each row equal to the step that would have produced it."
    )
    widgets.chart(figures.alignment_figure(aligned), "teacher-forcing-alignment")
    for kind in ("decoder", "cross"):
        if forced.get(kind) is not None:
            widgets.chart(attention.overview_figure(forced, kind), f"teacher-forcing-{kind}")


def decoder_steps_page() -> None:
    """Decode the sentence step by step; the controls walk through the steps."""
    decoder_view.advance()
    name, text = sidebar.draw()
    widgets.page_header(
        table.title("decoder_steps"),
        "The decoder is auto-regressive (section 3.1): the encoder reads the source once, then "
        "each step feeds the start symbol plus every output so far and appends one token. The "
        "mask hides the future, so a step adds one new row to each attention map and changes "
        "none of the old.",
        r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,\quad M_{ij}=-\infty"
        r"\text{ for } j>i",
    )
    if not caches.spec(name).has_decoder:
        message = f"{name} is an encoder only: it has no decoder, so there are no steps to show."
        switch.offer_switch(message, name, lambda s: "cross" in s.shows, "a decoder")
        st.stop()
    input_notes.input_notes(name, text)
    state.keep_or_set({"beam": 1, "top_k": 5, "max_steps": 40})  # shared in links
    left, mid, right = st.columns(3)
    beam = left.slider("Beam width", 1, 8, key="beam", help="1 is greedy decoding.")
    top_k = mid.slider("Top-k next tokens", 1, 10, key="top_k")
    max_steps = right.slider("Most output tokens", 1, 64, key="max_steps")
    dec = generation.decode(name, text, beam, top_k, max_steps)  # + chat, sampling
    source = st.container()  # in presenter mode below the rows, so they show on the first screen
    step = decoder_view.controls(len(dec.steps))
    decoder_view.step_view(dec, step, beam, name)
    with st.container() if widgets.presenting() else source:
        if dec.src_tokens:
            chips = widgets.chips(dec.src_tokens)
            st.markdown(f"**The encoder ran once** over the source: {chips}")
        else:
            st.markdown(
                "**Decoder-only model**: the prompt starts the decoder input; steps continue it."
            )
    teacher_forcing(name, text, len(dec.start_tokens), top_k, max_steps)
    decoder_view.tick(step, len(dec.steps))


decoder_steps_page()
