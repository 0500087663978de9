"""The way from a lesson's step to the page that shows it, in the step's view, and back.

A step names a page and a view in the app's URL keys (``state.URL_KEYS``); its link opens the
page as a shared link would, with the lesson page's own query string under ``lesson_back`` (a URL
key too, so the way back survives a reload or another replica).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode

import streamlit as st

from viz_transformer.ui import state

BACK_KEY = "lesson_back"
LESSON_FILE = "pages/lesson.py"  # the Lesson page's file, as st.page_link takes it
BACK_PARAMS = ("lesson", "class", "student")  # all that the lesson page reads from its URL


def view_values(model: str, view: Mapping[str, Any]) -> dict[str, Any]:
    """The session-state values of a step's ``view`` on ``model``, each read as a link reads it.

    Raises:
        ValueError: a key the app's URL does not have, or a value it cannot read.
    """
    values: dict[str, Any] = {state.MODEL_KEY: model}
    for key, value in view.items():
        if key not in state.URL_KEYS or key == BACK_KEY:
            raise ValueError(f"the view key {key!r} is none of the app's URL keys")
        values[key] = state.URL_KEYS[key](str(value))
    return values


def step_link(page: str, model: str, view: Mapping[str, Any], back: Mapping[str, str]) -> None:
    """A link to ``pages/<page>.py`` showing ``view`` of ``model``, as a shared link would (the
    page reads its URL again); ``back``: the lesson page's query parameters, for the way back.

    Raises:
        ValueError: a bad view (see ``view_values``).
    """
    values = view_values(model, view)
    params = {k: str(v) for k, v in values.items()}
    params[BACK_KEY] = urlencode({k: v for k, v in back.items() if k in BACK_PARAMS})
    st.session_state.pop(state.URL_READ_KEY, None)  # the next page takes its view from the link
    st.page_link(
        f"pages/{page}.py",
        query_params=params,
        icon=":material/open_in_browser:",
        help="Opens the page in the step's view; come back with 'Back to the lesson' "
        "at the top of its sidebar.",
    )


def back_params() -> dict[str, str]:
    """The lesson page's query parameters this session came from (empty if none)."""
    back = st.session_state.get(BACK_KEY)
    pairs = parse_qsl(back) if isinstance(back, str) else []
    return {k: v for k, v in pairs if k in BACK_PARAMS}


def back_button() -> None:
    """A link back to the lesson this view was opened from (nothing outside a lesson)."""
    params = back_params()
    if params:
        st.page_link(
            LESSON_FILE,
            label="Back to the lesson",
            icon=":material/arrow_back:",
            query_params=params,
        )
