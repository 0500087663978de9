"""Teacher: a class's board (opened by a one-time link, ``?class=CODE&once=TOKEN``): how to
join, the teacher's controls (pause, pace, names hidden, remove, a read-only link, a new key,
close), the per-step funnel, who is where, the most common wrong answers, the answers as CSV,
and leaving the class on this browser. Without a good session: nothing. No key reaches the
browser (pages/sections/teacher/entry.py)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.teacher import class_board, class_controls, entry
from viz_transformer.classroom.access import class_code
from viz_transformer.ui import class_store, sidebar, widgets


def teacher_page() -> None:
    """The class the URL names, if its key is right."""
    sidebar.frame()
    code = class_code(st.query_params.get("class", ""))  # as stored, as the cookie names it
    if not code:
        st.title(table.title("teacher"))
        entry.creator()
        return
    found = entry.enter(code)
    if found is None:
        st.title(table.title("teacher"))
        return
    key, role = found
    presenting = widgets.presenting()
    if presenting:  # a projector's first screen has room for the class, not the sidebar
        st.set_page_config(initial_sidebar_state="collapsed")
    lesson = class_store.or_stop(lambda: class_store.class_lesson(code))
    class_board.join_box(code, lesson)
    teacher = entry.is_teacher(role)
    controls = None  # a read-only link draws no control: nothing to keep up to date
    if teacher:  # above the funnel, on a projector's first screen too
        controls = class_store.or_stop(class_store.store().teacher.controls, code)
        class_controls.top_row(code, key, lesson, controls)
    else:
        st.caption("A read-only link: you see the class; only its teacher changes it.")
    class_board.live(code, key, lesson, controls)
    if teacher:
        with st.expander("More controls: names, remove a student, a read-only link, close"):
            roster = class_store.or_stop(class_store.store().teacher.roster, code, key)
            class_controls.more(code, key, controls, roster, class_board.base_url())
    entry.this_browser(code, key, teacher, class_board.base_url())


teacher_page()
