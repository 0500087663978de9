"""``ClassStore``: classes, students and their answers in a database (``vt.classroom(url)``).

A student's place (the step last opened) and every answer live in the database, not in a
replica's memory, so a replica may die and the student resumes on another. Every value goes in
through bound parameters; names and answers are stored as typed and must be escaped when shown.
Grading happens at answer time, from the lesson's model (``vt.grade``).

The store has two sides, split at their seam: the teacher's (``teacher_side.py``: create a class,
read it with the key; ``teacher_controls.py``: pace, pause, names hidden, remove, close, a
read-only key) and the students' (``student_side.py``: join, move, answer, under the teacher's
controls); what both share is in ``store_base.py``.
"""

from __future__ import annotations

from viz_transformer.classroom.controls import Controls
from viz_transformer.classroom.store_base import Answer, Student, class_code, clean_name, utc
from viz_transformer.classroom.student_side import StudentSide, StudentView
from viz_transformer.classroom.teacher_controls import TeacherControls
from viz_transformer.classroom.teacher_side import CODE_LENGTH, CODE_LETTERS, TEACHER, VIEWER

__all__ = [
    "CODE_LENGTH",
    "CODE_LETTERS",
    "TEACHER",
    "VIEWER",
    "Answer",
    "ClassStore",
    "Controls",
    "Student",
    "StudentView",
    "class_code",
    "clean_name",
    "utc",
]


class ClassStore(TeacherControls, StudentSide):
    """Classes of a lesson in one database; safe to share between threads and replicas.

    Teacher methods take the class's key and raise ``PermissionError`` for a wrong one;
    every method raises ``ValueError`` for an unknown class code or student token.
    """
