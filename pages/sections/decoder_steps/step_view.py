"""The decoder page's panels: step controls (Reset, Back, Next, Play, a slider) and one step.

The step lives in the session key ``step`` (shared in links). Play is one step per rerun: the
run that draws a step asks for the next run, which advances before the URL is written.
"""

from __future__ import annotations

import time

import streamlit as st

from viz_transformer.analysis import decoding
from viz_transformer.figures import decoder as figures
from viz_transformer.ui import state, switch, widgets

PLAY, ADVANCE, PAUSE = "_playing", "_advance", "_play_pause"  # non-widget state of Play
MANY_LAYERS = 6  # above this, the rows show one chosen layer's heads at a time
# the controls stay on screen (below Streamlit's 3.75rem header) while the rows scroll under them;
# the sticky box is the keyed container's wrapper: sticky sticks within the parent, and the
# container's own parent is no taller than the container itself
STICKY = (
    "<style>div:has(> .st-key-decoder_controls) { position: sticky; top: 3.75rem; z-index: 990; "
    "background: var(--st-background-color, white); padding: 0.25rem 0; }</style>"
)


def move(delta: int, n: int) -> None:
    """Go ``delta`` steps, staying within the ``n`` steps of the decoding."""
    st.session_state["step"] = min(max(st.session_state.get("step", 0) + delta, 0), n - 1)


def toggle_play(n: int) -> None:
    """Start or stop playing; Play from the last step starts again from the first."""
    if not st.session_state.get(PLAY) and st.session_state.get("step") == n - 1:
        st.session_state["step"] = 0
    st.session_state[PLAY] = not st.session_state.get(PLAY, False)


def advance() -> None:
    """Play's tick: call before the sidebar writes the step into the URL."""
    if st.session_state.pop(ADVANCE, False):
        st.session_state["step"] = st.session_state.get("step", 0) + 1


def controls(n: int) -> int:
    """The buttons and the slider over ``n`` steps; returns the step to show."""
    move(0, n)  # clamp a remembered or shared step to this decoding's length
    st.html(STICKY)
    # one row that wraps on a narrow screen: the buttons as wide as their labels, then the slider
    with st.container(key="decoder_controls", horizontal=True, vertical_alignment="bottom"):
        st.button("Reset", icon=":material/first_page:", key="reset", on_click=move, args=(-n, n))
        st.button("Back", icon=":material/chevron_left:", key="back", on_click=move, args=(-1, n))
        st.button(
            "Next",
            icon=":material/chevron_right:",
            key="next",
            on_click=move,
            args=(1, n),
            type="primary",
        )
        playing = st.session_state.get(PLAY)
        st.button(
            "Stop" if playing else "Play",
            key="play",
            on_click=toggle_play,
            args=(n,),
            icon=":material/stop:" if playing else ":material/play_arrow:",
        )
        if n > 1:
            return st.slider("Step", 0, n - 1, key="step")
    return 0


def layer_choice(dec: decoding.Decoding) -> int | None:
    """For a model with many decoder layers, the one layer whose heads the rows show (key
    ``dec_layer``, shared in links); None shows every layer."""
    row = dec.steps[0].cross_row if dec.steps[0].cross_row is not None else dec.steps[0].self_row
    n_layers = 0 if row is None else row.shape[0]
    if n_layers <= MANY_LAYERS:
        return None
    state.clamp_state(dec_layer=n_layers)
    return st.selectbox(
        f"Decoder layer ({n_layers}; one layer's heads at a time)", range(n_layers), key="dec_layer"
    )


def tick(step: int, n: int) -> None:
    """At the end of a run: while playing, pause briefly and rerun for the next step."""
    if not st.session_state.get(PLAY):
        return
    if step < n - 1:
        time.sleep(st.session_state.get(PAUSE, 0.7))
        st.session_state[ADVANCE] = True
    else:
        st.session_state[PLAY] = False
    st.rerun()


def step_view(dec: decoding.Decoding, step: int, beam: int, name: str = "") -> None:
    """One step: the newest attention rows right under the controls, then the next-token bars
    and the beams."""
    cur = dec.steps[step]
    st.markdown(
        f"**Decoder input at step {step}** (shifted right): {widgets.chips(cur.input_tokens)}"
    )
    layer = layer_choice(dec)
    stem = f"decoder-step{step}" + ("" if layer is None else f"-L{layer}")
    if cur.cross_row is None:
        switch.offer_kind(name, "cross", f"No cross-attention row: {dec.notes.get('cross', '')}")
    else:
        fig = figures.cross_rows_figure(cur, dec.src_tokens, layer)
        widgets.chart(fig, f"{stem}-cross")
    if cur.self_row is None:
        message = f"No masked self-attention row: {dec.notes.get('decoder', '')}"
        switch.offer_kind(name, "decoder", message)
    else:
        width = len(dec.steps[-1].input_tokens)
        widgets.chart(figures.self_rows_figure(cur, width, layer), f"{stem}-self")
    left, right = st.columns(2)
    with left:
        widgets.chart(figures.topk_figure(cur), f"decoder-step{step}-topk")
    with right:
        if beam > 1:
            widgets.chart(figures.beams_figure(cur), f"decoder-step{step}-beams")
        st.markdown(f"**Output so far:** {widgets.chips(dec.output_tokens[:step]) or '(none)'}")
    widgets.downloads(
        f"decoder-step{step}", decoding.step_arrays(cur), decoding.step_meta(dec, cur)
    )
