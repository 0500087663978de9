"""The teacher's controls on the Teacher page: pause and the pace on top (the two used while
teaching), then names hidden, a student removed, a read-only link and closing the class. Each
writes to the class store, where every student's page reads it within a couple of seconds; a
read-only link draws none of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

import viz_transformer as vt
from pages.sections.teacher import entry
from viz_transformer.classroom import Controls, viewer_link
from viz_transformer.figures.classroom import step_label
from viz_transformer.ui import class_store, widgets

ERROR = "_class_control_error"
VIEWER_LINK = "_class_viewer_link"  # code -> the read-only link made in this session


def _do(change: Callable[..., Any], *args: Any) -> None:
    """Callback: one change to the class; its failure is shown by the next run."""
    try:
        change(*args)
    except class_store.STORE_ERRORS as exc:
        st.session_state[ERROR] = class_store.message(exc)


def status(controls: Controls, bold: bool = True) -> str:
    """The controls in a few words ("**Paused** · up to step 3 · names hidden")."""
    mark = "**" if bold else ""
    words = [f"{mark}Closed{mark}"] if controls.closed else []
    words += [f"{mark}Paused{mark}"] if controls.paused else []
    words += [f"up to step {controls.pace}"] if controls.pace is not None else ["every step open"]
    words += ["names hidden"] if controls.hide_names else []
    return " · ".join(words)


def top_row(code: str, key: str, lesson: vt.Lesson, controls: Controls) -> None:
    """Pause (or Resume) and the pace, where the teacher finds them while teaching."""
    teacher = class_store.store().teacher
    pause, pace = st.columns([1, 3], vertical_alignment="bottom")
    if controls.paused:
        pause.button(
            "Resume",
            icon=":material/play_arrow:",
            key="class-resume",
            width="stretch",
            on_click=_do,
            args=(teacher.resume, code, key),
            type="primary",
        )
    else:
        pause.button(
            "Pause",
            icon=":material/pause:",
            key="class-pause",
            width="stretch",
            on_click=_do,
            args=(teacher.pause, code, key),
            help="Every student's page shows 'Eyes on the teacher' until you resume.",
        )
    steps = list(range(len(lesson.steps) + 1))  # 0: every step
    st.session_state["class-pace"] = controls.pace or 0  # as stored (a command may have set it)
    # on a projector the label goes inside the box: the funnel's first screen has no line spare
    short = widgets.presenting()
    say = "Students may go up to: " if short else ""
    pace.selectbox(
        "Students may go up to",
        steps,
        key="class-pace",
        label_visibility="collapsed" if short else "visible",
        format_func=lambda n: (
            say + (step_label(n, lesson.steps[n - 1].title) if n else "every step")
        ),
        on_change=lambda: _do(teacher.set_pace, code, key, st.session_state["class-pace"] or None),
    )
    if ERROR in st.session_state:
        widgets.show_error(st.session_state.pop(ERROR))


def more(code: str, key: str, controls: Controls, roster: pd.DataFrame, base: str) -> None:
    """Names hidden, a student removed, a read-only link, the class closed."""
    store = class_store.store()
    teacher = store.teacher
    st.session_state["class-hide-names"] = controls.hide_names
    st.toggle(
        "Hide names (pseudonyms on this page)",
        key="class-hide-names",
        on_change=lambda: _do(teacher.hide_names, code, key, st.session_state["class-hide-names"]),
    )
    shown = roster["pseudonym"] if controls.hide_names else roster["student"]
    _removal(code, key, dict(zip(roster["id"].astype(int), shown, strict=True)))
    if st.button(
        "Make a read-only link",
        key="class-viewer",
        help="For a co-teacher or an assistant: opens this page once, on one browser, where it "
        "changes nothing. A new one ends the last and the browsers it opened.",
    ):
        try:
            made = viewer_link(base, code, store.access.read_only_link(code, key))
        except class_store.STORE_ERRORS as exc:
            widgets.show_error(class_store.message(exc))
        else:
            st.session_state.setdefault(VIEWER_LINK, {})[code] = made
    if code in st.session_state.get(VIEWER_LINK, {}):
        st.code(st.session_state[VIEWER_LINK][code], language=None)
    _rotation(code, key)
    if controls.closed:
        st.caption("The class is closed: no more joins or answers. Its answers stay.")
        return
    sure = st.checkbox("I want to close the class (no more joins or answers)", key="class-close-ok")
    st.button(
        "Close the class",
        key="class-close",
        disabled=not sure,
        on_click=_do,
        args=(teacher.close, code, key),
    )


def _removal(code: str, key: str, who: dict[int, str]) -> None:
    """Remove a student (their page says the teacher removed them); whether their name may
    join again, decided then or later for a name removed before."""
    teacher = class_store.store().teacher
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    left.selectbox(
        "Remove a student (and their answers)",
        list(who),
        format_func=who.get,
        index=None,
        key="class-remove",
        placeholder="a test join, a mistaken name",
    )
    rejoin = st.checkbox("Their name may join again", key="class-remove-rejoin")
    right.button(
        "Remove",
        key="class-remove-go",
        width="stretch",
        disabled=st.session_state.get("class-remove") is None,
        on_click=lambda: _do(teacher.remove, code, key, st.session_state["class-remove"], rejoin),
    )
    try:
        barred = [name for name, ok in teacher.removed(code, key).items() if not ok]
    except class_store.STORE_ERRORS:
        barred = []  # the rest of the page says what failed
    if barred:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        left.selectbox("A removed name", barred, index=None, key="class-rejoin")
        right.button(
            "Let it join again",
            key="class-rejoin-go",
            width="stretch",
            disabled=st.session_state.get("class-rejoin") is None,
            on_click=lambda: _do(teacher.let_rejoin, code, key, st.session_state["class-rejoin"]),
        )


def _rotation(code: str, key: str) -> None:
    """A new teacher's key: the old one, its one-time links and every other browser holding
    the class end (each open Teacher page at its next redraw); this browser keeps the class."""
    sure = st.checkbox(
        "I want a new teacher's key (the old key and every other browser stop working)",
        key="class-rotate-ok",
    )
    st.button(
        "Change the teacher's key",
        key="class-rotate",
        icon=":material/key:",
        disabled=not sure,
        on_click=_rotate,
        args=(code, key),
    )


def _rotate(code: str, key: str) -> None:
    store = class_store.store()
    try:
        new = store.access.rotate(code, key)
        # the session held here ended with the old key
        session = store.access.open_session(code, new)
    except class_store.STORE_ERRORS as exc:
        st.session_state[ERROR] = class_store.message(exc)
        return
    st.session_state.setdefault(entry.KEYS, {})[code] = session
    st.session_state.setdefault(entry.HIDDEN, set()).discard(code)  # the cookie: the new one
    st.session_state.setdefault(entry.NEW_KEY, {})[code] = new
    st.session_state["class-rotate-ok"] = False
