"""Lesson: a path through the paper, a step at a time, whose questions the lesson's model grades.
``?lesson=NAME`` for a student alone; ``?class=CODE`` joins a class (``&student=TOKEN`` after)."""

from __future__ import annotations

import pages.nav.via_app  # noqa: F401  (first: before PyTorch loads)

# isort: split
import streamlit as st

from pages.sections.lesson import entry as lesson_entry
from pages.sections.lesson import step as lesson_step
from viz_transformer.ui import class_place, lesson_place, sidebar, widgets


def lesson_page() -> None:
    """The lesson the URL names, at the student's place."""
    sidebar.frame()
    code = st.query_params.get("class", "").strip().upper()
    token, name = st.query_params.get("student", ""), st.query_params.get("lesson", "")
    if code and not token:
        lesson_entry.join_form(code)
        return
    if code:
        place: lesson_place.Place = lesson_entry.class_student(code, token)
        class_place.watch(code, token, place.controls)  # redraws when the teacher pauses or paces
        class_place.remember(code, token)  # the student's other pages hold a pause too
        if place.controls.paused:
            class_place.paused()
            return
        note = f"Class **{widgets.literal(code)}** · you are **{widgets.literal(place.name)}**"
    elif name:
        place = widgets.or_stop(lesson_place.solo, name)
        note = "On your own: your progress stays in this browser tab."
    else:
        lesson_entry.chooser()
        return
    st.title(place.lesson.title)
    st.caption(f"{note} · every answer is graded on {place.lesson.model}")
    lesson_step.draw(place)


lesson_page()
