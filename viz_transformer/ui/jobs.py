"""A long computation shared by every session: a progress bar and a Stop button the first time,
its result from a bounded store (``records.bounded.BoundedCache``) after that.

Progress and Stop are ``records.progress``'s, as for every long job: the bar shows a
``ProgressMeter``'s record, and the job gets its ``StopToken`` as its ``stop`` argument (set by
a Stop recorded in the session), which raises ``Cancelled`` between two units of the work. The
Stop button also reruns the page, which Streamlit does by ending this run at its next ``st`` call:
the bar's update in the progress callback."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

import streamlit as st

from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.progress import Cancelled, OnFraction, ProgressMeter, StopToken
from viz_transformer.ui import widgets

T = TypeVar("T")
STOP_KEY = "_jobs_stopped"  # the keys of the jobs this session stopped, the latest last
KEPT = 16  # stopped jobs a session remembers
# set by a Stop, for the one run it starts: the page's other long jobs wait for a click instead
# of starting (a Stop means "quiet now"); app.py removes it when that run ends
HOLD_KEY = "_jobs_hold"


def _stopped() -> tuple[Hashable, ...]:
    return st.session_state.get(STOP_KEY, ())


def _stop(key: Hashable) -> None:
    # several jobs on a page (importance, then ablated outputs): stopping one must not restart
    # another that was stopped before
    st.session_state[STOP_KEY] = (*[k for k in _stopped() if k != key][1 - KEPT :], key)
    st.session_state[HOLD_KEY] = True


def release_hold() -> None:
    """End the hold a Stop set (app.py calls it when the run the Stop started ends)."""
    st.session_state.pop(HOLD_KEY, None)


def _resume(key: Hashable) -> None:
    st.session_state[STOP_KEY] = tuple(k for k in _stopped() if k != key)


@dataclass(frozen=True)
class JobText:
    """What a stoppable job says: ``label`` under its progress bar, ``stopped`` once stopped,
    ``resume`` on the button that starts it again; its widgets are ``<key>_stop`` and
    ``<key>_resume``."""

    label: str
    stopped: str
    resume: str
    key: str


def stoppable(
    job: JobText,
    store: BoundedCache,
    key: Hashable,
    compute: Callable[[OnFraction, StopToken], T],
) -> T | None:
    """``store[key]``, computed by ``compute(progress, stop)`` the first time under a progress
    bar and a Stop button (pass both to the library call: ``progress=progress, stop=stop``);
    None after a message (an error, or a stopped job with a button to start it again).

    Pressing Stop reruns the page (Streamlit interrupts the running job at its next progress
    update); the rerun finds the job's key in ``STOP_KEY`` and does not start it again, nor any
    other job it has not computed yet (``HOLD_KEY``): each waits for its button."""
    if key not in store and key in _stopped():
        st.info(job.stopped)
        st.button(job.resume, key=f"{job.key}_resume", on_click=_resume, args=(key,))
        return None
    if key not in store and st.session_state.get(HOLD_KEY):
        st.info("Not started: you pressed Stop. Start it when you want it.")
        st.button(job.resume, key=f"{job.key}_go", on_click=release_hold)  # its run starts it
        return None
    if key not in store:
        stop = st.empty()
        stop.button("Stop", key=f"{job.key}_stop", on_click=_stop, args=(key,))
        bar = st.progress(0.0, text=job.label)
        meter, token = ProgressMeter(), StopToken(also=lambda: key in _stopped())
        meter.update(0.0, 1.0)  # the rate counts from now

        def progress(fraction: float) -> None:
            # an st call, about every second (analysis.heads sizes its batches so): where
            # Streamlit ends this run when a Stop reruns the page
            done = meter.update(fraction, 1.0)
            bar.progress(done.fraction, text=f"{job.label} {done.text()}")

        try:
            store.put(key, compute(progress, token))
        except Cancelled:
            return None
        except widgets.LOAD_ERRORS as exc:
            widgets.show_error(exc)
            return None
        finally:
            bar.empty()
            stop.empty()
    return store[key]
