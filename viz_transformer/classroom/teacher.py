"""``Teacher``: what the teacher does with a class: open it, read it (every answer, the roster,
the per-step funnel, the most common wrong answers, or the four at once: ``board``) with the
teacher's or the read-only key, and change it with the teacher's key only (the pace, a pause,
names hidden, a student removed, the class closed). Changes are stored, so every replica's
students see them on their next redraw; the tables number steps from 1 (``reports.py``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sqlalchemy import Connection, Engine, delete, select
from sqlalchemy.exc import IntegrityError

from viz_transformer import course
from viz_transformer.classroom import removals, reports
from viz_transformer.classroom.access import (
    Access,
    class_code,
    key_hash,
    new_code,
    new_key,
    set_settings,
)
from viz_transformer.classroom.database import run
from viz_transformer.classroom.lessons import ClassLessons
from viz_transformer.classroom.rows import Controls, TeacherBoard, now, read_controls
from viz_transformer.classroom.schema import answers, classes, students, visits
from viz_transformer.classroom.student import clean_name
from viz_transformer.course.lesson import Lesson


class Teacher:
    """The teacher's side of the classes in one database: every method but ``create`` takes the
    class's key and raises ``PermissionError`` for a wrong one (the read-only key reads, never
    changes) and ``ValueError`` for an unknown class code."""

    def __init__(self, engine: Engine, lessons: ClassLessons, access: Access) -> None:
        self.engine, self.lessons, self.access = engine, lessons, access

    def create(self, lesson: Lesson | str | Path) -> tuple[str, str]:
        """Open a class on ``lesson`` (a ``Lesson``, a lesson name or a file path).

        Returns:
            ``(code, teacher_key)``: the code students join with, and the key the teacher's
            page and ``answers`` need (only its hash is stored: keep it).
        """
        lesson = lesson if isinstance(lesson, Lesson) else course.load_lesson(lesson)
        key = new_key()
        for _ in range(20):  # a code already taken: draw another
            code = new_code()
            row = {
                "code": code,
                "lesson_name": lesson.name,
                "lesson_source": lesson.source,
                "key_hash": key_hash(key),
                "created_at": now(),
            }
            try:
                run(self.engine, lambda conn, row=row: conn.execute(classes.insert(), row), True)
            except IntegrityError:
                continue
            self.lessons.remember(code, lesson)  # no warm-up: a command about to exit may create
            return code, key
        raise RuntimeError("could not draw a free class code; try again.")

    def answers(self, code: str, key: str) -> pd.DataFrame:
        """Every answer of the class, oldest first: columns ``student`` (display name), ``step``
        (from 1), ``answer`` (as typed), ``correct`` (nullable boolean: NA for free text),
        ``seconds`` (from first opening the step to answering), ``at`` (UTC)."""
        return self.access.read(code, key, reports.answer_table)

    def roster(self, code: str, key: str) -> pd.DataFrame:
        """Who joined, in joining order: ``id``, ``student``, ``pseudonym`` (shown instead of the
        name when names are hidden), ``step`` (the step each has open, from 1), ``answered`` and
        ``correct`` (how many steps), ``joined`` and ``seen`` (UTC)."""
        return self.access.read(code, key, reports.roster_table)

    def funnel(self, code: str, key: str) -> pd.DataFrame:
        """Per step of the lesson: ``step`` (from 1), ``title``, ``kind`` (check kind or None),
        ``reached`` (students who opened it), ``answered``, ``correct`` (students with a correct
        answer; NA for steps without a graded check)."""
        lesson = self.lessons.lesson(code)
        return self.access.read(code, key, lambda c, k: reports.funnel_table(c, k, lesson))

    def wrong_answers(self, code: str, key: str, top: int = 3) -> pd.DataFrame:
        """The most common wrong answers per step (compared ignoring case and spaces):
        ``step`` (from 1), ``answer`` (as first typed), ``students`` (how many gave it); at most
        ``top`` per step."""
        return self.access.read(code, key, lambda c, k: reports.wrong_table(c, k, top))

    def board(self, code: str, key: str) -> TeacherBoard:
        """The controls, ``roster``, ``funnel`` and ``wrong_answers`` read in one transaction
        with one check of either key: what the Teacher page redraws every few seconds."""
        lesson = self.lessons.lesson(code)

        def work(conn: Connection, code: str) -> TeacherBoard:
            return TeacherBoard(
                read_controls(conn, code),
                reports.roster_table(conn, code),
                reports.funnel_table(conn, code, lesson),
                reports.wrong_table(conn, code),
            )

        return self.access.read(code, key, work)

    def controls(self, code: str) -> Controls:
        """Class ``code``'s controls as stored now (no key: every student's page reads them).

        Raises:
            ValueError: unknown code.
        """
        code = class_code(code)
        self.lessons.lesson(code)  # an unknown code fails here
        return run(self.engine, lambda conn: read_controls(conn, code))

    def _set(self, code: str, key: str, **values: object) -> None:
        self.access.change(code, key, lambda conn, c: set_settings(conn, c, **values))

    def set_pace(self, code: str, key: str, pace: int | None) -> None:
        """Let students open steps 1 to ``pace`` (counted from 1, as on screen) and no further;
        None lifts it. A student past it is shown step ``pace`` and keeps every answer.

        Raises:
            ValueError: a pace that is not a step of the lesson.
        """
        steps = self.lessons.steps(code)  # no PyTorch: the lesson is not read whole
        if pace is not None and (isinstance(pace, bool) or not 1 <= int(pace) <= steps):
            raise ValueError(f"the pace is a step from 1 to {steps}, or 'all'; not {pace!r}.")
        self._set(code, key, pace=None if pace is None else int(pace))

    def pause(self, code: str, key: str) -> None:
        """Every student's page shows "Eyes on the teacher" and nothing else until ``resume``."""
        self._set(code, key, paused=True)

    def resume(self, code: str, key: str) -> None:
        """End a pause: every student's page shows their step again."""
        self._set(code, key, paused=False)

    def hide_names(self, code: str, key: str, hidden: bool = True) -> None:
        """Show pseudonyms instead of names on the Teacher page (``hidden=False``: names)."""
        self._set(code, key, hide_names=bool(hidden))

    def close(self, code: str, key: str) -> None:
        """No more joins or answers; the answers stay (``answers``, the CSV)."""
        self._set(code, key, closed_at=now())

    def remove(self, code: str, key: str, student: int | str, may_rejoin: bool = False) -> str:
        """Remove a student (a test join, a mistaken name) with their answers and places; their
        page then says the teacher removed them, and their name may join again only with
        ``may_rejoin`` (or ``let_rejoin`` later). ``student``: their roster ``id``, or name.

        Returns:
            The name of the student removed.

        Raises:
            ValueError: no such student, or a name that two students have (remove by id).
        """
        return self.access.change(code, key, lambda c, k: _remove(c, k, student, may_rejoin))

    def let_rejoin(self, code: str, key: str, name: str, allowed: bool = True) -> None:
        """Let a removed name join class ``code`` again (``allowed=False``: no longer).

        Raises:
            ValueError: no student of that name was removed.
        """
        self.access.change(code, key, lambda c, k: removals.let_rejoin(c, k, name, allowed))

    def removed(self, code: str, key: str) -> dict[str, bool]:
        """The names removed from class ``code``, each with whether it may join again."""
        return self.access.read(code, key, removals.names)


def _remove(conn: Connection, code: str, student: int | str, may_rejoin: bool) -> str:
    mine = select(students.c.id, students.c.name, students.c.token)
    mine = mine.where(students.c.class_code == code)
    if isinstance(student, int):
        found = conn.execute(mine.where(students.c.id == student)).all()
    else:
        wanted = clean_name(student).casefold()
        found = [r for r in conn.execute(mine).all() if r.name.casefold() == wanted]
    if not found:
        raise ValueError(f"no student {student!r} in class {code}.")
    if len(found) > 1:
        raise ValueError(
            f"{len(found)} students are named {student!r}; remove one of them on the Teacher page."
        )
    sid = found[0].id
    removals.record(conn, code, found[0].token, found[0].name, may_rejoin)
    conn.execute(delete(answers).where(answers.c.student_id == sid))
    conn.execute(delete(visits).where(visits.c.student_id == sid))
    conn.execute(delete(students).where(students.c.id == sid))
    return found[0].name
