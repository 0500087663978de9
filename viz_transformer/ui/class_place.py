"""A student of a class on the Lesson page (``?class=CODE&student=TOKEN``): their place and
answers, and the teacher's controls, read from the class store on every run; and the watch that
redraws the page within ``WATCH_S`` seconds of the teacher pausing, pacing or closing the class,
or removing the student (another replica's change too: nothing is kept in a process's memory);
``hold``: the pause on the student's other pages too."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

import streamlit as st

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.ui import lesson_links
from viz_transformer.ui.class_store import STORE_ERRORS, class_lesson, store
from viz_transformer.ui.lesson_place import Place

WATCH_S = 1.0  # seconds between two reads of the controls by an open student page


@dataclass
class ClassPlace(Place):
    """A student of a class: every move and answer is written to the class store first."""

    code: str = ""
    token: str = ""

    def move(self, step: int) -> None:
        store().students.move(self.code, self.token, step)
        super().move(step)

    def submit(self, step: int, answer: str) -> vt.Grade:
        result = store().students.submit(self.code, self.token, step, answer)
        self.answers[step] = (answer, result)
        return result


def in_class(code: str, token: str) -> ClassPlace:
    """The place of the student ``token`` in class ``code``, read from the class store (one
    transaction): at most the teacher's pace, whatever step they had open before it was set.

    Raises:
        ValueError: an unknown class code or student token (a student removed, too).
    """
    found, board = class_lesson(code), store().students.board(code, token)
    answers = {a.step: (a.answer, a.grade) for a in board.answers}
    back = {"class": code, "student": token}
    place = ClassPlace(found, 0, answers, back, board.student.name, board.controls, code, token)
    place.step = min(board.student.place, place.open_steps - 1)
    return place


def join(code: str, name: str) -> str:
    """Join class ``code`` as ``name``; the token, also put in the URL (``&student=``) so a
    reload resumes. Raises ``ValueError`` for an unknown code, an empty name or a closed class."""
    token = store().students.join(code, name)
    store().students.move(code, token, 0)  # the first step is opened: the funnel counts it reached
    st.query_params["student"] = token
    return token


def _seen(controls: Controls) -> tuple[int | None, bool, bool]:
    """What of the controls a student's page shows (names hidden only change the teacher's)."""
    return controls.pace, controls.paused, controls.closed


@st.fragment(run_every=WATCH_S)
def watch(code: str, token: str, drawn: Controls) -> None:
    """Every ``WATCH_S`` seconds, read class ``code``'s controls; rerun the whole page when they
    differ from ``drawn``, those the page was drawn with, or when the teacher removed the student
    (the page then asks them to join again; a database error: the next tick)."""
    try:
        now = store().students.watch(code, token)
    except STORE_ERRORS:
        return
    if now is None or _seen(now) != _seen(drawn):
        st.rerun()


def paused() -> None:
    """The page of every student while the teacher pauses the class: nothing else."""
    st.title("Eyes on the teacher", anchor=False)
    st.markdown(
        "Your teacher paused the class. This page comes back by itself; your answers are kept."
    )


def hold(code: str, token: str) -> None:
    """On any other page of a class's student (a step's link, the sidebar's list of pages): the
    teacher's pause there too, and the watch that redraws the page when it starts or ends. The
    page calls it before drawing anything; while paused it draws only the pause and stops."""
    try:
        controls = store().students.watch(code, token)
    except STORE_ERRORS:
        return
    if controls is None:  # removed, or an unknown class: the Lesson page says so
        return
    watch(code, token, controls)
    if controls.paused:
        paused()
        st.stop()


def remember(code: str, token: str) -> None:
    """Keep the class and the student for this session's other pages (the way back to the
    lesson, ``lesson_links.BACK_KEY``): one opened from the sidebar's list holds a pause too."""
    st.session_state[lesson_links.BACK_KEY] = urlencode({"class": code, "student": token})


def hold_lessons_class() -> None:
    """``hold`` for the class of the lesson this session came from, if it is a class's."""
    back = lesson_links.back_params()
    if back.get("class") and back.get("student"):
        hold(back["class"], back["student"])
