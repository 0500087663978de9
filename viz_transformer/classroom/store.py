"""``ClassStore``: classes, students and their answers in a database (``vt.classroom(url)``),
one object per role, each called directly: ``store.teacher.create(lesson)``,
``store.students.join(code, name)``, ``store.access.one_time_link(code, key)``,
``store.lessons.lesson(code)``. An operation is written once, in its role's module.

A student's place (the step last opened) and every answer live in the database, not in a
replica's memory, so a replica may die and the student resumes on another. Every value goes in
through bound parameters; names and answers are stored as typed and must be escaped when shown.
Grading happens at answer time, from the lesson's model (``vt.grade``).

The roles: ``access.py`` (``Access``: codes, keys, one-time links, sessions, who may do what),
``teacher.py`` (``Teacher``: open a class, read it, change its controls), ``student.py``
(``Students``: join, move, answer), ``lessons.py`` (``ClassLessons``: each class's lesson, read
once), over ``rows.py`` (what the store returns) and ``schema.py`` (its tables).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Engine

from viz_transformer.classroom.access import Access
from viz_transformer.classroom.lessons import ClassLessons, traced
from viz_transformer.classroom.student import Students
from viz_transformer.classroom.teacher import Teacher

if TYPE_CHECKING:
    from viz_transformer.course.grading import TraceOf


class ClassStore:
    """The classes of one database, by role; safe to share between threads and replicas.

    The teacher's methods take the class's key (or a session standing for it) and raise
    ``PermissionError`` for a wrong one (the read-only key reads, never changes); every method
    raises ``ValueError`` for an unknown class code or student token.

    Attributes:
        teacher: ``Teacher``: ``create``, ``answers``, ``roster``, ``funnel``,
            ``wrong_answers``, ``board``, ``controls``, ``set_pace``, ``pause``, ``resume``,
            ``hide_names``, ``close``, ``remove``, ``let_rejoin``, ``removed``.
        students: ``Students``: ``join``, ``student``, ``place``, ``move``, ``submit``,
            ``answers_of``, ``board``, ``watch``, ``count``.
        access: ``Access``: ``check_key``, ``viewer_key``, ``one_time_link``,
            ``read_only_link``, ``open_link``, ``open_session``, ``rotate``, ``leave``.
        lessons: ``ClassLessons``: ``lesson``, ``warm``.

    Args:
        engine: the database's engine (``database.engine_for``).
        traces: ``(model name, sentence) -> Trace`` that grading reads the model's answers
            from: the app passes its pages' cache (``ui/caches.trace``); the default traces at
            every answer (``grading.traced``).
    """

    def __init__(self, engine: Engine, traces: TraceOf = traced) -> None:
        self.engine, self.traces = engine, traces
        self.lessons = ClassLessons(engine, traces)
        self.access = Access(engine)
        self.teacher = Teacher(engine, self.lessons, self.access)
        self.students = Students(engine, self.lessons, traces)

    def __repr__(self) -> str:
        return f"ClassStore({self.engine.url.render_as_string(hide_password=True)})"
