"""Teacher: a class's live view (``?class=CODE&key=KEY``): how to join, the teacher's controls
(pause, pace, names hidden, remove, close, a read-only link), the per-step funnel, who is where,
the most common wrong answers, the answers as CSV. Without a right key: nothing. The key leaves
the address bar and the browser's history once checked (kept in the session, and in a cookie
for a reload: pages/sections/teacher_access.py)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)
from pages.nav import table

# isort: split
import streamlit as st

from pages.sections.teacher import access as teacher_access
from pages.sections.teacher import class_controls, class_view
from viz_transformer.ui import class_store, sidebar, widgets


def teacher_page() -> None:
    """The class the URL names, if its key is right."""
    sidebar.frame()
    code = st.query_params.get("class", "").strip().upper()
    if not code:
        st.title(table.title("teacher"))
        teacher_access.creator()
        return
    found = teacher_access.access(code)
    if found is None:
        st.title(table.title("teacher"))
        return
    key, role = found
    presenting = widgets.presenting()
    if presenting:  # a projector's first screen has room for the class, not the sidebar
        st.set_page_config(initial_sidebar_state="collapsed")
    lesson = class_store.or_stop(lambda: class_store.class_lesson(code))
    class_view.join_box(code, lesson)
    teacher = teacher_access.is_teacher(role)
    controls = None  # a read-only link draws no control: nothing to keep up to date
    if teacher:  # above the funnel, on a projector's first screen too
        controls = class_store.or_stop(class_store.store().controls, code)
        class_controls.top_row(code, key, lesson, controls)
    else:
        st.caption("A read-only link: you see the class; only its teacher changes it.")
    class_view.live(code, key, lesson, controls)
    if teacher:
        with st.expander("More controls: names, remove a student, a read-only link, close"):
            roster = class_store.or_stop(class_store.store().roster, code, key)
            class_controls.more(code, key, controls, roster, class_view.base_url())
        if not presenting:
            class_view.teacher_link(code, key)


teacher_page()
