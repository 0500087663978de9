"""One step of a lesson on the Lesson page: progress, the text, a link to the step's page in the
step's view, the check with its feedback, and Back / Next (which move the student's place)."""

from __future__ import annotations

import functools

import streamlit as st

from viz_transformer.classroom.student import CLOSED
from viz_transformer.ui import (
    answer_widgets,
    class_store,
    focus,
    lesson_links,
    lesson_place,
    widgets,
)

ERROR_KEY = "_lesson_error"  # why the last answer or move failed, shown once


def marks(place: lesson_place.Place) -> list[str]:
    """One mark per step: answered right, wrong, saved (free text), or not answered."""
    out = []
    for i in range(len(place.lesson.steps)):
        grade = place.answers[i][1] if i in place.answers else None
        out.append("·" if grade is None else {True: "✓", False: "✗", None: "✎"}[grade.correct])
    return out


def progress(place: lesson_place.Place) -> None:
    """Where the student is: a bar, and every step's number with its mark (a click opens it)."""
    n, i = len(place.lesson.steps), place.step
    questions = [k for k, step in enumerate(place.lesson.steps) if step.question is not None]
    answered = sum(1 for k in questions if k in place.answers)
    st.progress((i + 1) / n, text=f"Step {i + 1} of {n} · {answered} of {len(questions)} answered")
    labels = [f"{m} {k + 1}" for k, m in enumerate(marks(place))]
    key = f"lesson-steps-{i}-{place.open_steps}"  # a move or a new pace starts it afresh
    st.segmented_control(
        "Steps",
        range(place.open_steps),
        format_func=lambda k: labels[k],
        default=i,
        key=key,
        label_visibility="collapsed",
        on_change=_picked,
        args=(place, key),
    )


def _picked(place: lesson_place.Place, key: str) -> None:
    """Callback of the step picker: open the step picked."""
    picked = st.session_state.get(key)
    if picked is not None and picked != place.step:
        _move(place, picked)


def _move(place: lesson_place.Place, step: int) -> None:
    """Callback: open ``step`` (its failure, e.g. a database down, is shown by the next run);
    the focus and the view go to the step's top."""
    focus.request("step")
    try:
        place.move(step)
    except class_store.STORE_ERRORS as exc:
        st.session_state[ERROR_KEY] = class_store.message(exc)


def _answer(place: lesson_place.Place, step: int, answer: str) -> None:
    """Callback: grade and keep ``answer`` to ``step``; the focus goes to the feedback."""
    focus.request("feedback", "center")
    try:
        place.submit(step, answer)
    except class_store.STORE_ERRORS as exc:
        st.session_state[ERROR_KEY] = class_store.message(exc)


def navigation(place: lesson_place.Place) -> None:
    """Back and Next: they move the student's place (answering does not); Next stops at the
    teacher's pace."""
    n, i = len(place.lesson.steps), place.step
    held = i >= place.open_steps - 1 and place.open_steps < n
    back, _, forward = st.columns([1, 3, 1])
    back.button(
        "Back",
        icon=":material/arrow_back:",
        disabled=i == 0,
        width="stretch",
        on_click=_move,
        args=(place, i - 1),
    )
    forward.button(
        "Next",
        icon=":material/arrow_forward:",
        type="primary",
        disabled=i == n - 1 or held,
        width="stretch",
        on_click=_move,
        args=(place, i + 1),
    )
    if held:
        st.info(
            f"Wait for your teacher: the class goes up to step {place.open_steps} for now. "
            "Next opens when they move the class on.",
            icon=":material/front_hand:",
        )
    elif i == n - 1:
        st.caption("The last step. Well done.")


def draw(place: lesson_place.Place) -> None:
    """The step ``place`` has open, whole."""
    i = place.step
    step = place.lesson.steps[i]
    with focus.anchor("step"):
        progress(place)
        st.header(step.title, anchor=False)
    st.markdown(step.text)  # the lesson's Markdown and LaTeX
    if step.page:
        try:
            lesson_links.step_link(step.page, place.lesson.model, step.view, place.back)
        except ValueError as exc:
            widgets.show_error(exc)
    if step.question is not None and place.controls.closed:
        st.info(CLOSED)
        if i in place.answers:
            answer_widgets.show_grade(*place.answers[i])
    elif step.question is not None:
        given = place.answers[i][0] if i in place.answers else None
        answer_widgets.answer_box(step.question, i, given, functools.partial(_answer, place, i))
        with focus.anchor("feedback"):
            if ERROR_KEY in st.session_state:
                widgets.show_error(st.session_state.pop(ERROR_KEY))
            elif i in place.answers:
                answer_widgets.show_grade(*place.answers[i])
    navigation(place)
    focus.apply()
