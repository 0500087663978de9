"""Where a student is in a lesson, and what they answered: in the session for a student alone
(``?lesson=NAME``), in the class store for a class (``?class=CODE&student=TOKEN``), so a reload
or another replica resumes at the same step with the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

import viz_transformer as vt
from viz_transformer.ui import widgets

SOLO_KEY = "_lesson_solo"  # lesson name -> {"step": int, "answers": {step: (answer, Grade)}}


@st.cache_resource(show_spinner=False)
def store() -> vt.ClassStore:
    """The class store of this server (``VT_DATABASE_URL``, else SQLite in the cache folder)."""
    return vt.classroom()


@st.cache_resource(max_entries=32, show_spinner=False)
def lesson(name: str) -> vt.Lesson:
    """A lesson by name, read once per server (``vt.load_lesson``): only the names
    ``vt.lessons()`` lists, never a path, since the name comes from the URL."""
    return vt.load_lesson(name, paths=False)


@dataclass
class Place:
    """A student's place in ``lesson``: the step open, and the last answer given to each step.

    Attributes:
        lesson: the lesson followed.
        step: the step open (0-based).
        answers: step -> ``(answer as typed, its Grade)``, the last one given.
        back: the lesson page's query parameters (how a step's page links back here).
        name: the student's display name in a class (None alone).
    """

    lesson: vt.Lesson
    step: int
    answers: dict[int, tuple[str, vt.Grade]] = field(default_factory=dict)
    back: dict[str, str] = field(default_factory=dict)
    name: str | None = None

    def move(self, step: int) -> None:
        """Open ``step`` (Next, Back, a step picked)."""
        self.step = step

    def submit(self, step: int, answer: str) -> vt.Grade:
        """Grade ``answer`` to ``step`` on the lesson's model and keep it."""
        check = self.lesson.steps[step].check
        assert check is not None, f"step {step} has no question"
        result = vt.grade(check, answer)
        self.answers[step] = (answer, result)
        return result


class SoloPlace(Place):
    """A student alone: the place lives in this session only."""

    def move(self, step: int) -> None:
        super().move(step)
        st.session_state[SOLO_KEY][self.lesson.name]["step"] = step

    def submit(self, step: int, answer: str) -> vt.Grade:
        result = super().submit(step, answer)
        st.session_state[SOLO_KEY][self.lesson.name]["answers"] = self.answers
        return result


@dataclass
class ClassPlace(Place):
    """A student of a class: every move and answer is written to the class store first."""

    code: str = ""
    token: str = ""

    def move(self, step: int) -> None:
        store().move(self.code, self.token, step)
        super().move(step)

    def submit(self, step: int, answer: str) -> vt.Grade:
        result = store().submit(self.code, self.token, step, answer)
        self.answers[step] = (answer, result)
        return result


def solo(name: str) -> SoloPlace:
    """The session's place in lesson ``name`` (step 0 on a first visit).

    Raises:
        ValueError: no lesson of that name (``vt.lessons()`` lists them).
    """
    found = lesson(name)
    kept = st.session_state.setdefault(SOLO_KEY, {}).setdefault(
        found.name, {"step": 0, "answers": {}}
    )
    return SoloPlace(found, kept["step"], dict(kept["answers"]), {"lesson": name})


def in_class(code: str, token: str) -> ClassPlace:
    """The place of the student ``token`` in class ``code``, read from the class store.

    Raises:
        ValueError: an unknown class code or student token.
    """
    found, student = store().lesson(code), store().student(code, token)
    answers = {a.step: (a.answer, a.grade) for a in store().answers_of(code, token)}
    step = min(student.place, len(found.steps) - 1)
    back = {"class": code, "student": token}
    return ClassPlace(found, step, answers, back, student.name, code, token)


def join(code: str, name: str) -> str:
    """Join class ``code`` as ``name``; the token, also put in the URL (``&student=``) so a
    reload resumes. Raises ``ValueError`` for an unknown code or an empty name."""
    token = store().join(code, name)
    store().move(code, token, 0)  # the first step is opened: the funnel counts it reached
    st.query_params["student"] = token
    return token


def show_grade(answer: str, grade: vt.Grade) -> None:
    """The feedback on ``answer`` (shown literally): green when right, red when wrong, yellow
    when it could not be read, blue for free text."""
    said = f"Your answer: **{widgets.literal(answer)}**"
    if grade.correct is None:
        st.info(f"{said}  \n{widgets.literal(grade.feedback)}")
    elif grade.correct:
        st.success(f"{said}  \n{widgets.literal(grade.feedback)}", icon=":material/check:")
    else:
        show = st.error if grade.readable else st.warning
        show(f"{said}  \n{widgets.literal(grade.feedback)}", icon=":material/close:")
