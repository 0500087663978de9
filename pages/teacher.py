"""Teacher: a class's live view (``?class=CODE&key=KEY``): who joined, where each student is, the
per-step funnel, the most common wrong answers, the answers as CSV. Without the key: nothing."""

from __future__ import annotations

import pages.sections.via_app  # noqa: F401  (first: before PyTorch loads)

# isort: split
import streamlit as st

import viz_transformer as vt
from pages.sections import class_view
from viz_transformer.ui import lesson_place, sidebar, widgets

CREATE_ERROR = "_create_error"


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
        code, key = lesson_place.store().create(st.session_state["class-lesson"])
    except lesson_place.STORE_ERRORS as exc:
        st.session_state[CREATE_ERROR] = lesson_place.message(exc)
    else:
        st.query_params.from_dict({"class": code, "key": key})


def _title(name: str) -> str:
    found = widgets.or_none(lesson_place.lesson, name)
    return f"{found.title} ({name})" if found is not None else name


def allowed(code: str, key: str) -> bool:
    """Whether ``key`` is class ``code``'s teacher key; if not, a message and nothing else."""
    if not key:
        st.error("This page needs the teacher's link of the class (it ends with `&key=...`). "
                 "Nothing of a class is shown without it.")  # fmt: skip
        return False
    try:
        lesson_place.store().check_key(code, key)
    except PermissionError:
        st.error("The key in this link is not this class's teacher key. Nothing of the class is "
                 "shown; open the teacher's link printed when the class was created.")  # fmt: skip
        return False
    except lesson_place.STORE_ERRORS as exc:
        widgets.show_error(lesson_place.message(exc))
        return False
    return True


def teacher_page() -> None:
    """The class the URL names, if its key is right."""
    sidebar.frame()
    st.title("Teacher")
    code = st.query_params.get("class", "").strip().upper()
    key = st.query_params.get("key", "").strip()
    if not code:
        creator()
        return
    if not allowed(code, key):
        return
    lesson = lesson_place.or_stop(lambda: lesson_place.class_lesson(code))
    st.subheader(lesson.title, anchor=False)
    if not widgets.presenting():
        class_view.links(code, key)
    class_view.live(code, key, lesson)


teacher_page()
