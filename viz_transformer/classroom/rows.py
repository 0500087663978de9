"""The values the class store returns (``Student``, ``Answer``, ``Controls``, and the two
boards, what one redraw of a class page reads in one transaction), each rebuilt from its table's
row in one place here; times are UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import Connection, Row, select

from viz_transformer.classroom.schema import class_settings
from viz_transformer.course.lesson import Grade


@dataclass(frozen=True)
class Student:
    """One student of a class, as ``Students.student`` returns it.

    Attributes:
        name: the display name as typed (escape it when shown).
        place: the step they last opened (0-based): where a reload resumes.
        joined_at: when they joined (UTC).
    """

    name: str
    place: int
    joined_at: datetime


@dataclass(frozen=True)
class Answer:
    """One answer a student gave, with the grade it got then.

    Attributes:
        step: the step's 0-based index in the lesson.
        answer: the answer as typed.
        grade: ``correct``, ``expected``, ``feedback`` and ``readable`` as given at answer time.
        at: when (UTC).
    """

    step: int
    answer: str
    grade: Grade
    at: datetime


@dataclass(frozen=True)
class Controls:
    """What the teacher set for a class (``Teacher.controls``).

    Attributes:
        pace: the last step students may open, counted from 1 as on screen; None: every step.
        paused: every student's page shows "Eyes on the teacher" and nothing else.
        hide_names: the Teacher page shows pseudonyms instead of names.
        closed: no more joins or answers (the answers stay and export).
    """

    pace: int | None = None
    paused: bool = False
    hide_names: bool = False
    closed: bool = False

    def allows(self, step: int) -> bool:
        """Whether a student may open ``step`` (0-based) under the pace."""
        return self.pace is None or step < self.pace


@dataclass(frozen=True)
class StudentBoard:
    """A student's board: what each run of a student's page reads, in one transaction
    (``Students.board``).

    Attributes:
        student: name, place (0-based) and when they joined.
        answers: their answers, oldest first.
        controls: the teacher's controls of the class now.
    """

    student: Student
    answers: list[Answer]
    controls: Controls


@dataclass(frozen=True)
class TeacherBoard:
    """The teacher's board: what the Teacher page redraws every few seconds, read in one
    transaction with one check of the key (``Teacher.board``); the tables are
    ``Teacher.roster``, ``funnel`` and ``wrong_answers``'s.

    Attributes:
        controls: the teacher's controls of the class now.
        roster: who joined and where each is.
        funnel: per step, how many reached, answered and answered right.
        wrong: the most common wrong answers per step.
    """

    controls: Controls
    roster: pd.DataFrame
    funnel: pd.DataFrame
    wrong: pd.DataFrame


def now() -> datetime:
    """The time now, in UTC."""
    return datetime.now(UTC)


def utc(value: datetime) -> datetime:
    """A stored time as UTC (SQLite gives it back without its zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def grade_from_row(row: Row) -> Grade:
    """The ``Grade`` an answer's row (``vt_answers``) was given; a row stored before
    ``readable`` was (NULL) reads as readable, as every answer then was shown."""
    return Grade(row.correct, row.expected, row.feedback, row.readable is not False)


def grade_columns(result: Grade) -> dict[str, object]:
    """The columns of ``vt_answers`` that keep ``result`` (``grade_from_row`` reads them back)."""
    return {
        "correct": result.correct,
        "expected": result.expected,
        "feedback": result.feedback,
        "readable": result.readable,
    }


def answer_from_row(row: Row) -> Answer:
    """An ``Answer`` from its row of ``vt_answers``."""
    return Answer(row.step, row.answer, grade_from_row(row), utc(row.at))


def student_from_row(row: Row) -> Student:
    """A ``Student`` from their row of ``vt_students``."""
    return Student(row.name, row.place, utc(row.joined_at))


def read_controls(conn: Connection, code: str) -> Controls:
    """Class ``code``'s controls as stored (``vt_class_settings``; no row: the defaults)."""
    row = conn.execute(select(class_settings).where(class_settings.c.code == code)).first()
    if row is None:
        return Controls()
    return Controls(row.pace, bool(row.paused), bool(row.hide_names), row.closed_at is not None)
