"""``ClassStore``: classes, students and their answers in a database (``vt.classroom(url)``),
one object that hands each call to the part of the store whose role it is.

A student's place (the step last opened) and every answer live in the database, not in a
replica's memory, so a replica may die and the student resumes on another. Every value goes in
through bound parameters; names and answers are stored as typed and must be escaped when shown.
Grading happens at answer time, from the lesson's model (``vt.grade``).

The parts: ``access.py`` (codes, keys, who may do what), ``teacher.py`` (open a class, read it,
change its controls), ``student.py`` (join, move, answer), ``lessons.py`` (each class's lesson,
read once), over ``rows.py`` (what the store returns) and ``schema.py`` (its tables).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from sqlalchemy import Engine

from viz_transformer.classroom.access import Access
from viz_transformer.classroom.lessons import ClassLessons, traced
from viz_transformer.classroom.rows import (
    Answer,
    Controls,
    Student,
    StudentBoard,
    TeacherBoard,
)
from viz_transformer.classroom.student import Students
from viz_transformer.classroom.teacher import Teacher
from viz_transformer.course.lesson import Grade, Lesson

if TYPE_CHECKING:
    from viz_transformer.course.grading import TraceOf


class ClassStore:
    """Classes of a lesson in one database; safe to share between threads and replicas.

    Teacher methods take the class's key and raise ``PermissionError`` for a wrong one (the
    read-only key reads, never changes); every method raises ``ValueError`` for an unknown class
    code or student token. Each method is its part's (``Teacher``, ``Students``, ``Access``,
    ``ClassLessons``): read its docstring there.

    Args:
        engine: the database's engine (``database.engine_for``).
        traces: ``(model name, sentence) -> Trace`` that grading reads the model's answers
            from: the app passes its pages' cache (``ui/caches.trace``); the default traces at
            every answer (``grading.traced``).
    """

    def __init__(self, engine: Engine, traces: TraceOf = traced) -> None:
        self.engine, self.traces = engine, traces
        self._lessons = ClassLessons(engine, traces)
        self._access = Access(engine)
        self._teacher = Teacher(engine, self._lessons, self._access)
        self._students = Students(engine, self._lessons, traces)

    def __repr__(self) -> str:
        return f"ClassStore({self.engine.url.render_as_string(hide_password=True)})"

    # the class's lesson (ClassLessons)
    def lesson(self, code: str) -> Lesson:
        """The lesson class ``code`` runs (``ClassLessons.lesson``)."""
        return self._lessons.lesson(code)

    def warm(self, code: str) -> None:
        """Trace class ``code``'s graded sentences in the background (``ClassLessons.warm``)."""
        self._lessons.warm(code)

    # keys (Access)
    def check_key(self, code: str, key: str) -> str:
        """``"teacher"`` or ``"viewer"``: the role of ``key`` (``Access.check_key``)."""
        return self._access.check_key(code, key)

    def viewer_key(self, code: str, key: str) -> str:
        """A new read-only key; the old one stops working (``Access.viewer_key``)."""
        return self._access.viewer_key(code, key)

    def one_time_link(self, code: str, key: str) -> str:
        """A one-time link's token that opens the class as its teacher once (``Access.link``)."""
        return self._access.link(code, key)

    def read_only_link(self, code: str, key: str) -> str:
        """A one-time read-only link's token; the read-only links before end
        (``Access.viewer_link``)."""
        return self._access.viewer_link(code, key)

    def open_link(self, code: str, token: str) -> tuple[str, str]:
        """Use a one-time link: ``(session, role)`` (``Access.open_link``)."""
        return self._access.open_link(code, token)

    def open_session(self, code: str, key: str) -> str:
        """A browser session standing for ``key`` (``Access.session``)."""
        return self._access.session(code, key)

    def rotate(self, code: str, key: str) -> str:
        """A new teacher's key; every session of the old one ends (``Access.rotate``)."""
        return self._access.rotate(code, key)

    def leave(self, code: str, session: str) -> bool:
        """End a browser session (``Access.leave``)."""
        return self._access.leave(code, session)

    # the teacher (Teacher)
    def create(self, lesson: Lesson | str | Path) -> tuple[str, str]:
        """Open a class: ``(code, teacher_key)`` (``Teacher.create``)."""
        return self._teacher.create(lesson)

    def answers(self, code: str, key: str) -> pd.DataFrame:
        """Every answer of the class, oldest first (``Teacher.answers``)."""
        return self._teacher.answers(code, key)

    def roster(self, code: str, key: str) -> pd.DataFrame:
        """Who joined and where each is (``Teacher.roster``)."""
        return self._teacher.roster(code, key)

    def funnel(self, code: str, key: str) -> pd.DataFrame:
        """Per step: reached, answered, correct (``Teacher.funnel``)."""
        return self._teacher.funnel(code, key)

    def wrong_answers(self, code: str, key: str, top: int = 3) -> pd.DataFrame:
        """The most common wrong answers per step (``Teacher.wrong_answers``)."""
        return self._teacher.wrong_answers(code, key, top)

    def teacher_board(self, code: str, key: str) -> TeacherBoard:
        """Controls, roster, funnel and wrong answers in one transaction
        (``Teacher.board``)."""
        return self._teacher.board(code, key)

    def controls(self, code: str) -> Controls:
        """Class ``code``'s controls now, no key needed (``Teacher.controls``)."""
        return self._teacher.controls(code)

    def set_pace(self, code: str, key: str, pace: int | None) -> None:
        """Students open steps 1 to ``pace`` only; None: all (``Teacher.set_pace``)."""
        self._teacher.set_pace(code, key, pace)

    def pause(self, code: str, key: str) -> None:
        """Every student's page shows "Eyes on the teacher" (``Teacher.pause``)."""
        self._teacher.pause(code, key)

    def resume(self, code: str, key: str) -> None:
        """End a pause (``Teacher.resume``)."""
        self._teacher.resume(code, key)

    def hide_names(self, code: str, key: str, hidden: bool = True) -> None:
        """Pseudonyms instead of names on the Teacher page (``Teacher.hide_names``)."""
        self._teacher.hide_names(code, key, hidden)

    def close(self, code: str, key: str) -> None:
        """No more joins or answers (``Teacher.close``)."""
        self._teacher.close(code, key)

    def remove(self, code: str, key: str, student: int | str, may_rejoin: bool = False) -> str:
        """Remove a student by id or name, with their answers (``Teacher.remove``)."""
        return self._teacher.remove(code, key, student, may_rejoin)

    def let_rejoin(self, code: str, key: str, name: str, allowed: bool = True) -> None:
        """Let a removed name join again, or not (``Teacher.let_rejoin``)."""
        self._teacher.let_rejoin(code, key, name, allowed)

    def removed(self, code: str, key: str) -> dict[str, bool]:
        """Removed names and whether each may join again (``Teacher.removed``)."""
        return self._teacher.removed(code, key)

    # a student (Students)
    def join(self, code: str, name: str) -> str:
        """Join class ``code`` as ``name``: the student's token (``Students.join``)."""
        return self._students.join(code, name)

    def student(self, code: str, token: str) -> Student:
        """The student with ``token`` (``Students.student``)."""
        return self._students.student(code, token)

    def place(self, code: str, token: str) -> int:
        """The step the student last opened (``Students.place``)."""
        return self._students.place(code, token)

    def move(self, code: str, token: str, step: int) -> None:
        """The student opened ``step`` (``Students.move``)."""
        self._students.move(code, token, step)

    def submit(self, code: str, token: str, step: int, answer: str) -> Grade:
        """Grade ``answer`` to ``step`` and keep it (``Students.submit``)."""
        return self._students.submit(code, token, step, answer)

    def answers_of(self, code: str, token: str) -> list[Answer]:
        """The student's own answers, oldest first (``Students.answers_of``)."""
        return self._students.answers_of(code, token)

    def student_board(self, code: str, token: str) -> StudentBoard:
        """The student, their answers and the controls in one transaction (``Students.board``)."""
        return self._students.board(code, token)

    def watch(self, code: str, token: str) -> Controls | None:
        """The controls, or None once the student was removed (``Students.watch``)."""
        return self._students.watch(code, token)

    def count(self, code: str) -> int:
        """How many answers class ``code`` has stored (``Students.count``)."""
        return self._students.count(code)
