"""The decoder page's panels: step controls (Reset, Back, Next, Play, a slider) and one step.

The step lives in the session key ``step`` (shared in links). Play is one step per rerun: the
run that draws a step asks for the next run, which advances before the URL is written.
"""

from __future__ import annotations

import time

import streamlit as st

from viz_transformer.analysis import decoding
from viz_transformer.figures import decoder as figures
from viz_transformer.ui import widgets

PLAY, ADVANCE, PAUSE = "_playing", "_advance", "_play_pause"  # non-widget state of Play


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
    buttons = st.columns(4)
    buttons[0].button("⏮ Reset", key="reset", on_click=move, args=(-n, n), width="stretch")
    buttons[1].button("◀ Back", key="back", on_click=move, args=(-1, n), width="stretch")
    buttons[2].button("Next ▶", key="next", on_click=move, args=(1, n), width="stretch")
    label = "⏹ Stop" if st.session_state.get(PLAY) else "▶ Play"
    buttons[3].button(label, key="play", on_click=toggle_play, args=(n,), width="stretch")
    return st.slider("Step", 0, n - 1, key="step") if n > 1 else 0


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


def step_view(dec: decoding.Decoding, step: int, beam: int) -> None:
    """One step: the next-token bars, the beams, and the newest attention rows."""
    cur = dec.steps[step]
    st.markdown(
        f"**Decoder input at step {step}** (shifted right): {widgets.chips(cur.input_tokens)}"
    )
    left, right = st.columns(2)
    with left:
        widgets.chart(figures.topk_figure(cur), f"decoder-step{step}-topk")
    with right:
        if beam > 1:
            widgets.chart(figures.beams_figure(cur), f"decoder-step{step}-beams")
        st.markdown(f"**Output so far:** {widgets.chips(dec.output_tokens[:step]) or '(none)'}")
    if cur.self_row is None:
        st.info(f"No masked self-attention row: {dec.notes.get('decoder', '')}")
    else:
        width = len(dec.steps[-1].input_tokens)
        widgets.chart(figures.self_rows_figure(cur, width), f"decoder-step{step}-self")
    if cur.cross_row is None:
        st.info(f"No cross-attention row: {dec.notes.get('cross', '')}")
    else:
        widgets.chart(figures.cross_rows_figure(cur, dec.src_tokens), f"decoder-step{step}-cross")
    widgets.downloads(
        f"decoder-step{step}", decoding.step_arrays(cur), decoding.step_meta(dec, cur)
    )
