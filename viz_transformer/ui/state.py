"""Session state: the keys a shared view lives in and their round trip through the URL (the
callbacks that change the model and sentence are in ``ui.callbacks``).

The view a teacher may share (model, sentence, kind, layer, head, step, the open tab, presenter
mode and every option that changes what is drawn) lives in session-state
keys that ``sidebar.draw()`` reads from the URL once per session and writes back on every run;
pages use the same keys for their widgets, so a link reproduces the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

# the URL keys and their readers live below the UI, so lesson files are checked against them
from viz_transformer.records.view_keys import MODEL_KEY as MODEL_KEY
from viz_transformer.records.view_keys import PRESENTER_KEY as PRESENTER_KEY
from viz_transformer.records.view_keys import TEXT_KEY, URL_KEYS

HF_KEY, EXTRA_KEY = "hf_id", "_extra_models"
SHOWN_KEY, HF_ERROR_KEY = "_model_shown", "_hf_error"
URL_READ_KEY = "_url_read"  # set once the session's view was taken from the URL
KEPT_KEYS = (*URL_KEYS, HF_KEY, SHOWN_KEY)
URL_TEXT_LIMIT = 2000  # longer text stays out of the URL (servers refuse very long request lines)
LONG_TEXT_KEYS = (TEXT_KEY, "cmp_text")


def keep(keys: Sequence[str] = KEPT_KEYS) -> None:
    """Keep the values of ``keys`` when the user moves to a page where their widgets are new.

    Streamlit drops the state of a widget that a run does not draw; re-assigning a key makes it
    plain state, so the value survives until the widget is drawn again.
    """
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def kept(key: str) -> dict[str, str]:
    """A widget's ``key`` and ``persist_state="session"``: its value follows the user to the next
    page even after a fragment's rerun ("Show the numbers", "Save figure"), which ``keep`` (full
    runs only) misses; without it Streamlit dropped the sidebar's model and sentence there."""
    return {"key": key, "persist_state": "session"}


def keep_or_set(defaults: dict[str, Any]) -> None:
    """Like ``keep``, for widgets in tabs now hidden: each key starts at its default."""
    for key, value in defaults.items():
        st.session_state[key] = st.session_state.get(key, value)


def read_url() -> None:
    """Once per session: take the view from the URL (a teacher's link), ignoring bad values."""
    if st.session_state.get(URL_READ_KEY):
        return
    st.session_state[URL_READ_KEY] = True
    for key, cast in URL_KEYS.items():
        if key in st.query_params:
            try:
                st.session_state[key] = cast(st.query_params[key])
            except ValueError:
                continue


def write_url() -> None:
    """Mirror the current view into the URL so copying it reproduces the view."""
    for key in URL_KEYS:
        value = st.session_state.get(key)
        if key in LONG_TEXT_KEYS and value is not None and len(str(value)) > URL_TEXT_LIMIT:
            st.query_params.pop(key, None)  # a long document does not fit in a link
            continue
        if value is not None and st.query_params.get(key) != str(value):
            st.query_params[key] = str(value)


def clamp_state(**uppers: int) -> None:
    """Keep remembered indices valid when the model (and so the number of layers) changes:
    ``clamp_state(layer=6, head=8)`` resets a key whose value is not in ``range(upper)``."""
    for key, upper in uppers.items():
        value = st.session_state.get(key, 0)
        if not isinstance(value, int) or not 0 <= value < upper:
            st.session_state[key] = 0


def keep_choice(key: str, options: Sequence[Any], default: Any = None) -> None:
    """Reset a remembered choice that the current options no longer offer (to ``default``, or
    the first option), so a widget keyed ``key`` never starts on a value it lacks."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if default is None else default
