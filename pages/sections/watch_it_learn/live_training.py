"""The "Watch it learn" page's sections: start the server's live run, watch it grow (redrawn
every ``REFRESH_S`` seconds by a fragment), stop it, and open its model in the other pages.

One run serves every session (``caches.live_trainer``): a second visitor sees the run in
progress and its Stop button; a second Start is refused with a message.
"""

from __future__ import annotations

from html import escape

import numpy as np
import streamlit as st

from viz_transformer.training.live.metrics import antidiagonal_mass
from viz_transformer.training.live.runs import DEFAULT_SECONDS, LiveSnapshot, LiveTrainer
from viz_transformer.training.live.train import MAX_SECONDS, probe_tokens
from viz_transformer.training.tasks.catalog import TASKS
from viz_transformer.ui import caches, state, widgets

REFRESH_S = 2.0  # seconds between two redraws while a run is in progress
TASK_KEY, SECONDS_KEY, COMPARE_KEY = "live_task", "live_seconds", "live_compare"
NOTICE_KEY = "_live_notice"


def _start(trainer: LiveTrainer) -> None:
    """Start button: a new run, or the reason there is none (kept for the next run's page)."""
    had_models = bool(trainer.snapshot().models)
    try:
        trainer.start(
            st.session_state[TASK_KEY],
            st.session_state[SECONDS_KEY],
            compare=st.session_state[COMPARE_KEY],
        )
    except (RuntimeError, ValueError) as exc:
        st.session_state[NOTICE_KEY] = str(exc)
        return
    if had_models:  # traces and figures of the previous live:* models are cached by name
        st.cache_data.clear()
        st.cache_resource.clear()


def _open(name: str, example: str) -> None:
    """Callback of "Open ... in the other pages": select the live model and its example."""
    st.session_state[state.MODEL_KEY] = name
    st.session_state[state.SHOWN_KEY] = name
    st.session_state[state.TEXT_KEY] = example


def controls(trainer: LiveTrainer) -> None:
    """Task, time limit, the unscaled twin and Start; a refused start says why."""
    left, right = st.columns(2)
    task = left.selectbox("Task", list(TASKS), key=TASK_KEY)
    right.slider("Time limit (seconds)", 10, MAX_SECONDS, DEFAULT_SECONDS, 10, key=SECONDS_KEY)
    # its own row: in a third of a 1024 px screen the label was cut to "Also train without ..."
    st.toggle(
        "Also train without 1/√d_k",
        True,
        key=COMPARE_KEY,
        help="A twin with the same seed and data whose scores skip the scale.",
    )
    st.caption(TASKS[task].description)
    st.button(
        "Start training",
        type="primary",
        on_click=_start,
        args=(trainer,),
        key="live_start",
        help="One run at a time per server, shared by everyone on it; it trains in one "
        "CPU thread and stops by itself at its time limit.",
    )
    notice = st.session_state.pop(NOTICE_KEY, None)
    if notice:
        st.warning(widgets.literal(notice))


def _status(trainer: LiveTrainer, snap: LiveSnapshot) -> None:
    done = min(snap.elapsed / snap.limit, 1.0) if snap.limit else 0.0
    verb = {"running": "Training", "done": "Finished", "stopped": "Stopped", "failed": "Failed"}
    # one row: the maps start higher, on the first screen of a 1024x768 projector
    with st.container(horizontal=True, vertical_alignment="bottom"):
        text = f"{verb[snap.state]}: {snap.task}, {snap.elapsed:.0f} of {snap.limit:.0f} s"
        st.progress(done, text, width="stretch")
        if snap.state == "running":
            st.button("Stop", on_click=trainer.stop, key="live_stop")
    if snap.message:
        widgets.show_error(snap.message)


def _widest_output(task: str) -> str:
    """A stand-in as wide as the widest output of the probe (in a monospaced font): its most
    tokens, each as long as the task's longest word."""
    spec = TASKS[task]
    word = "m" * max(map(len, spec.lexicon))
    return (" " if spec.detok == "space" else "").join([word] * probe_tokens(task))


def _said(label: str, output: str, widest: str, after: str) -> None:
    """``label``: the model now says ``output``, in a box as tall as with the widest output: a
    hidden copy with ``widest`` shares its grid cell. The maps under it stay put as the output
    changes (its line wrapped now and then, and the maps jumped 26-32 px on a redraw); the
    output is monospaced, so no output of as many letters is wider than ``widest``."""

    def line(said: str) -> str:
        said = f"<code>{escape(said)}</code>" if said else "<i>nothing</i>"
        return f"<b>{escape(label)}</b>: the model now says {said}{escape(after)}"

    st.markdown(
        f"<div style='display: grid'><div style='grid-area: 1 / 1'>{line(output)}</div>"
        f"<div style='grid-area: 1 / 1; visibility: hidden' aria-hidden='true'>{line(widest)}"
        "</div></div>",
        unsafe_allow_html=True,
    )


def _runs(snap: LiveSnapshot) -> None:
    """Each run's probe maps side by side: cross-attention and decoder self-attention."""
    figs = caches.live_figures(snap.run_id, snap.version, snap)
    # maps first (the first screen of a projector); presenter mode stacks the runs, so each
    # run's heads get the page's width and their labels stay apart
    wide = widgets.presenting() or len(snap.traces) == 1
    columns = [st.container() for _ in snap.traces] if wide else st.columns(len(snap.traces))
    share = 1.0 if wide else 1 / len(snap.traces)
    widest = _widest_output(snap.task)
    for column, (label, record) in zip(columns, snap.traces.items(), strict=True):
        with column:
            after = ""
            if snap.task == "reverse":
                mass = float(np.max(antidiagonal_mass(record)[-1]))
                after = f" · anti-diagonal mass of the best last-layer head: {mass:.2f}"
            _said(label, snap.outputs[label], widest, after)
            for kind in ("cross", "decoder"):
                key = f"live-{label}-{kind}"
                widgets.chart(figs[f"{label}/{kind}"], f"live-{kind}", key, share=share)
    widgets.chart(figs["curves"], "live-curves", key="live-curves")


def _results(snap: LiveSnapshot) -> None:
    example = TASKS[snap.task].example
    for name in snap.models:
        st.button(
            f"Open {name} in the other pages",
            key=f"open-{name}",
            on_click=_open,
            args=(name, example),
        )
    if snap.models:
        st.page_link("pages/attention_maps.py", label="Attention maps", icon=":material/grid_on:")


def live_view(trainer: LiveTrainer) -> None:
    """The run's progress, curves and maps; redrawn every ``REFRESH_S`` s while it trains."""
    running = trainer.running()

    def draw() -> None:
        snap = trainer.snapshot()
        if running and snap.state != "running":
            st.rerun(scope="app")  # the run ended: stop the timer, offer its models
        if snap.state == "idle":
            st.info("No run yet on this server: pick a task and press Start.")
            return
        _status(trainer, snap)
        if snap.traces:
            _runs(snap)
        if snap.state != "running":
            _results(snap)

    st.fragment(draw, run_every=REFRESH_S if running else None)()
