"""Step-by-step decoder: the encoder runs once, then one output token per step (section 3.1)."""

import time

import streamlit as st

from viz_transformer import ui
from viz_transformer.analysis import decoding
from viz_transformer.figures import attention
from viz_transformer.figures import decoder as figures

PLAY, ADVANCE, PAUSE = "_playing", "_advance", "_play_pause"  # non-widget state of Play


@st.cache_data(max_entries=64, show_spinner="Decoding step by step…")
def cached_steps(name: str, text: str, beam: int, top_k: int, max_steps: int) -> decoding.Decoding:
    return decoding.decode_steps(ui.cached_model(name), text, max_steps, beam, top_k)


def chips(tokens: tuple[str, ...]) -> str:
    return " ".join(f"`{t.replace('`', 'ˋ')}`" for t in tokens)


def move(delta: int, n: int) -> None:
    st.session_state["step"] = min(max(st.session_state.get("step", 0) + delta, 0), n - 1)


def toggle_play(n: int) -> None:
    if not st.session_state.get(PLAY) and st.session_state.get("step") == n - 1:
        st.session_state["step"] = 0  # Play from the end starts again
    st.session_state[PLAY] = not st.session_state.get(PLAY, False)


if st.session_state.pop(ADVANCE, False):  # Play's tick, before the URL is written
    st.session_state["step"] = st.session_state.get("step", 0) + 1
name, text = ui.sidebar()
ui.page_header(
    "Step-by-step decoder",
    "The decoder is auto-regressive (section 3.1): the encoder reads the source once, then each "
    "step feeds the start symbol plus every output so far and appends one token. The mask hides "
    "the future, so a step adds one new row to each attention map and changes none of the old.",
    r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V,\quad M_{ij}=-\infty"
    r"\text{ for } j>i",
)
if not {"decoder", "cross"} & set(ui.cached_spec(name).shows):
    st.info(f"{name} is an encoder only: it has no decoder, so there are no steps to show.")
    st.stop()
left, mid, right = st.columns(3)
beam = left.slider("Beam width", 1, 8, 1, key="beam", help="1 is greedy decoding.")
top_k = mid.slider("Top-k next tokens", 1, 10, 5, key="top_k")
max_steps = right.slider("Most output tokens", 1, 64, 40, key="max_steps")
try:
    dec = cached_steps(name, text, beam, top_k, max_steps)
except (ValueError, RuntimeError, OSError) as exc:
    ui.show_error(exc)
    st.stop()
n = len(dec.steps)
move(0, n)  # clamp a remembered or shared step to this decoding's length
if dec.src_tokens:
    st.markdown(f"**The encoder ran once** over the source: {chips(dec.src_tokens)}")
else:
    st.markdown("**Decoder-only model**: the prompt starts the decoder input; steps continue it.")
buttons = st.columns(4)
buttons[0].button("⏮ Reset", key="reset", on_click=move, args=(-n, n), width="stretch")
buttons[1].button("◀ Back", key="back", on_click=move, args=(-1, n), width="stretch")
buttons[2].button("Next ▶", key="next", on_click=move, args=(1, n), width="stretch")
play_label = "⏹ Stop" if st.session_state.get(PLAY) else "▶ Play"
buttons[3].button(play_label, key="play", on_click=toggle_play, args=(n,), width="stretch")
step = st.slider("Step", 0, n - 1, key="step") if n > 1 else 0
cur = dec.steps[step]
st.markdown(f"**Decoder input at step {step}** (shifted right): {chips(cur.input_tokens)}")
left, right = st.columns(2)
with left:
    ui.chart(figures.topk_figure(cur), f"decoder-step{step}-topk")
with right:
    if beam > 1:
        ui.chart(figures.beams_figure(cur), f"decoder-step{step}-beams")
    st.markdown(f"**Output so far:** {chips(dec.output_tokens[:step]) or '(none)'}")
if cur.self_row is None:
    st.info(f"No masked self-attention row: {dec.notes.get('decoder', '')}")
else:
    width = len(dec.steps[-1].input_tokens)
    ui.chart(figures.self_rows_figure(cur, width), f"decoder-step{step}-self")
if cur.cross_row is None:
    st.info(f"No cross-attention row: {dec.notes.get('cross', '')}")
else:
    ui.chart(figures.cross_rows_figure(cur, dec.src_tokens), f"decoder-step{step}-cross")
ui.downloads(f"decoder-step{step}", decoding.step_arrays(cur), decoding.step_meta(dec, cur))

st.subheader("Teacher forcing")
reference = st.text_input("Reference output", key="target", placeholder="a correct output")
if reference.strip():
    try:
        forced = ui.cached_trace(name, text, reference)
    except (ValueError, RuntimeError, OSError) as exc:
        ui.show_error(exc)
    else:
        greedy = cached_steps(name, text, 1, top_k, max_steps)
        forced_tokens = decoding.reference_tokens(forced, len(dec.start_tokens))
        aligned = decoding.align(greedy.output_tokens, forced_tokens)
        st.markdown(
            f"Training feeds the reference instead of the model's own outputs: all "
            f"{len(forced.tgt_tokens)} decoder positions run in **one parallel pass** under the "
            "causal mask, each row equal to the step that would have produced it."
        )
        ui.chart(figures.alignment_figure(aligned), "teacher-forcing-alignment")
        for kind in ("decoder", "cross"):
            if forced.get(kind) is not None:
                ui.chart(attention.overview_figure(forced, kind), f"teacher-forcing-{kind}")

if st.session_state.get(PLAY):  # Play: one step per rerun, a short pause between
    if step < n - 1:
        time.sleep(st.session_state.get(PAUSE, 0.7))
        st.session_state[ADVANCE] = True
    else:
        st.session_state[PLAY] = False
    st.rerun()
