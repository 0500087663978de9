"""The ways into the Teacher page: opening a class on a lesson (no class in the URL), and the key
of a class's link, checked, then kept in the session and taken out of the address bar so a
projected page shows no key."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.classroom.access import TEACHER
from viz_transformer.ui import class_store, lesson_place, widgets

CREATE_ERROR = "_create_error"
KEYS = "_teacher_keys"  # class code -> the key this session's link gave, once checked


def creator() -> None:
    """No class in the URL: open a class on a lesson; the page becomes its teacher's view."""
    st.markdown(
        "Open a class on a lesson: students join with its code or link, and this page shows "
        "where each of them is. Keep the teacher's link: its key is shown once."
    )
    names = widgets.or_stop(vt.lessons)
    with st.form("create-class", border=False):
        st.selectbox("Lesson", names, format_func=_title, key="class-lesson")
        st.form_submit_button("Open a class", type="primary", on_click=_create)
    if CREATE_ERROR in st.session_state:
        widgets.show_error(st.session_state.pop(CREATE_ERROR))


def _create() -> None:
    try:
        code, key = class_store.store().create(st.session_state["class-lesson"])
    except class_store.STORE_ERRORS as exc:
        st.session_state[CREATE_ERROR] = class_store.message(exc)
    else:
        st.query_params.from_dict({"class": code, "key": key})


def _title(name: str) -> str:
    found = widgets.or_none(lesson_place.lesson, name)
    return f"{found.title} ({name})" if found is not None else name


def access(code: str) -> tuple[str, str] | None:
    """``(key, role)`` for class ``code``: the key from the link (or kept in this session),
    checked on every run, and ``"teacher"`` or ``"viewer"`` (a read-only link); None, with a
    message and nothing of the class, without a right key. A key from the link is kept in the
    session and leaves the address bar."""
    kept = st.session_state.setdefault(KEYS, {})
    key = st.query_params.get("key", "").strip() or kept.get(code, "")
    if not key:
        st.error(
            "This page needs the teacher's link of the class (it ends with `&key=...`). "
            "Nothing of a class is shown without it."
        )
        return None
    try:
        role = class_store.store().check_key(code, key)
    except PermissionError:
        kept.pop(code, None)
        st.error(
            "The key in this link is not this class's teacher key. Nothing of the class is "
            "shown; open the teacher's link printed when the class was created."
        )
        return None
    except class_store.STORE_ERRORS as exc:
        widgets.show_error(class_store.message(exc))
        return None
    kept[code] = key
    st.query_params.pop("key", None)  # a projected address bar shows no key
    return key, role


def is_teacher(role: str) -> bool:
    """Whether ``role`` may change the class (a read-only link may not)."""
    return role == TEACHER
