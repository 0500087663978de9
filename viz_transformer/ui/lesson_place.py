"""Where a student is in a lesson, and what they answered: in the session for a student alone
(``?lesson=NAME``), in the class store for a class (``?class=CODE&student=TOKEN``,
``ui/class_place.py``; the server's store: ``ui/class_store.py``), so a reload or another
replica resumes at the same step with the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.ui import head_caches

SOLO_KEY = "_lesson_solo"  # lesson name -> {"step": int, "answers": {step: (answer, Grade)}}


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
        controls: the teacher's controls of the class (none alone).
    """

    lesson: vt.Lesson
    step: int
    answers: dict[int, tuple[str, vt.Grade]] = field(default_factory=dict)
    back: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    controls: Controls = field(default_factory=Controls)

    @property
    def open_steps(self) -> int:
        """How many steps the student may open: every step, or up to the teacher's pace."""
        n = len(self.lesson.steps)
        return n if self.controls.pace is None else min(n, self.controls.pace)

    def move(self, step: int) -> None:
        """Open ``step`` (Next, Back, a step picked)."""
        self.step = step

    def submit(self, step: int, answer: str) -> vt.Grade:
        """Grade ``answer`` to ``step`` on the lesson's model (from the pages' traces) and keep
        it. Raises ``ValueError`` for a step without a question, or one its model cannot grade."""
        question = self.lesson.steps[step].question
        if question is None:  # a stale form of a step the lesson no longer asks about
            raise ValueError(f"Step {step + 1} has no question to answer.")
        result = vt.grade(question, answer, head_caches.grading_caches())
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
