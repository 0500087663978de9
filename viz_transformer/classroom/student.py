"""``Students``: what a student does in a class, by the token ``join`` gave them: join, open
steps (the place a reload resumes at) and answer, each answer graded on the lesson's model at
answer time and kept with its grade; all under the teacher's controls (pace, closed)."""

from __future__ import annotations

import secrets
import unicodedata
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, Row, func, select, update

from viz_transformer import course
from viz_transformer.classroom import removals
from viz_transformer.classroom.access import class_code
from viz_transformer.classroom.database import run, upsert
from viz_transformer.classroom.lessons import ClassLessons
from viz_transformer.classroom.rows import (
    Answer,
    Controls,
    Student,
    StudentBoard,
    answer_from_row,
    grade_columns,
    now,
    read_controls,
    student_from_row,
    utc,
)
from viz_transformer.classroom.schema import (
    ANSWER_CHARS,
    NAME_CHARS,
    answers,
    classes,
    students,
    visits,
)
from viz_transformer.course.lesson import Grade

if TYPE_CHECKING:
    from viz_transformer.course.grading import TraceOf

CLOSED = "This class is closed: it takes no more students or answers (yours are kept)."


def clean_name(name: str) -> str:
    """A display name: control characters dropped, spaces collapsed, at most ``NAME_CHARS``.

    Raises:
        ValueError: nothing left to show.
    """
    text = "".join(c for c in str(name) if unicodedata.category(c)[0] != "C")
    text = " ".join(text.split())[:NAME_CHARS]
    if not text:
        raise ValueError("Type a name to show your teacher (any nickname).")
    return text


def _beyond(controls: Controls) -> ValueError:
    return ValueError(f"Wait for your teacher: the class goes up to step {controls.pace} for now.")


class Students:
    """The students' side of the classes in one database; every method raises ``ValueError``
    for an unknown class code or student token.

    Args:
        engine: the database's engine (``database.engine_for``).
        lessons: the classes' lessons (``ClassLessons``).
        traces: ``(model name, sentence) -> Trace`` that answers are graded from.
    """

    def __init__(self, engine: Engine, lessons: ClassLessons, traces: TraceOf) -> None:
        self.engine, self.lessons, self.traces = engine, lessons, traces

    def join(self, code: str, name: str) -> str:
        """Add a student named ``name`` to class ``code``; their token (put it in their URL).

        Raises:
            ValueError: unknown code, or a name with nothing to show.
        """
        code = class_code(code)
        name, at = clean_name(name), now()
        self.lessons.lesson(code)  # an unknown code fails here
        token = secrets.token_urlsafe(16)
        row = {
            "token": token,
            "class_code": code,
            "name": name,
            "place": 0,
            "joined_at": at,
            "seen_at": at,
        }

        def work(conn: Connection) -> None:
            if read_controls(conn, code).closed:
                raise ValueError(CLOSED)
            removals.check_name(conn, code, name)
            conn.execute(students.insert(), row)

        run(self.engine, work, True)
        return token

    def _student_row(self, conn: Connection, code: str, token: str) -> Row:
        code = class_code(code)
        row = conn.execute(
            select(students).where(students.c.token == str(token), students.c.class_code == code)
        ).first()
        if row is None:
            if conn.execute(select(classes.c.code).where(classes.c.code == code)).first() is None:
                raise ValueError(f"no class with code {code!r}; check the code.")
            said = removals.said_to(conn, code, token)  # the teacher removed them: say so
            raise ValueError(said or "unknown student token for this class; join again.")
        return row

    def student(self, code: str, token: str) -> Student:
        """The student with ``token`` in class ``code``: name, place and when they joined."""
        code = class_code(code)
        return run(self.engine, lambda conn: student_from_row(self._student_row(conn, code, token)))

    def place(self, code: str, token: str) -> int:
        """The step the student last opened (0 after joining): where a reload resumes."""
        return self.student(code, token).place

    def _visit(self, conn: Connection, student_id: int, step: int, at: datetime) -> None:
        upsert(conn, visits, {"student_id": student_id, "step": step, "opened_at": at})

    def move(self, code: str, token: str, step: int) -> None:
        """Record that the student opened ``step``: their place, and the first time they
        reached it (Next and Back call this; answering does not move a student).

        Raises:
            ValueError: a step beyond the teacher's pace ("Wait for your teacher").
        """
        code = class_code(code)
        self.lessons.with_step(code, step)
        at = now()

        def work(conn: Connection) -> None:
            row = self._student_row(conn, code, token)
            controls = read_controls(conn, code)
            if not controls.allows(step):
                raise _beyond(controls)
            self._visit(conn, row.id, step, at)
            moved = update(students).where(students.c.id == row.id)
            conn.execute(moved.values(place=step, seen_at=at))

        run(self.engine, work, True)

    def submit(self, code: str, token: str, step: int, answer: str) -> Grade:
        """Grade ``answer`` to ``step`` (0-based) on the lesson's model and store it.

        Returns:
            The ``Grade`` (stored with the answer; every answer is kept, retries too, but the
            same text sent again right after, as Enter then Check does, is one answer: its
            first grade, one row).

        Raises:
            ValueError: unknown code or token, a step that does not exist or has no question,
                an answer longer than ``ANSWER_CHARS``, a step beyond the teacher's pace, a
                closed class.
        """
        code = class_code(code)
        question = self.lessons.with_step(code, step).steps[step].question
        if question is None:
            raise ValueError(f"step {step} has no question to answer.")
        answer = str(answer)
        if len(answer) > ANSWER_CHARS:
            raise ValueError(f"an answer may have at most {ANSWER_CHARS} characters.")
        last = run(self.engine, lambda conn: self._last_answer(conn, code, token, step))
        if last is not None and last.answer == answer:
            return last.grade
        result = course.grade(question, answer, self.traces)  # before the transaction: no lock held
        at = now()

        def work(conn: Connection) -> Grade:
            row = self._student_row(conn, code, token)
            controls = read_controls(conn, code)
            if controls.closed:
                raise ValueError(CLOSED)
            if not controls.allows(step):
                raise _beyond(controls)
            again = self._last_answer(conn, code, token, step)  # sent twice at once
            if again is not None and again.answer == answer:
                return again.grade
            self._visit(conn, row.id, step, at)
            first = select(visits.c.opened_at).where(
                visits.c.student_id == row.id, visits.c.step == step
            )
            opened = conn.execute(first).scalar_one()
            conn.execute(
                answers.insert(),
                {
                    "class_code": code,
                    "student_id": row.id,
                    "step": step,
                    "answer": answer,
                    **grade_columns(result),
                    "at": at,
                    "seconds": max((at - utc(opened)).total_seconds(), 0.0),
                },
            )
            conn.execute(update(students).where(students.c.id == row.id).values(seen_at=at))
            return result

        return run(self.engine, work, True)

    def _last_answer(self, conn: Connection, code: str, token: str, step: int) -> Answer | None:
        row = self._student_row(conn, code, token)
        mine = select(answers).where(answers.c.student_id == row.id, answers.c.step == step)
        last = conn.execute(mine.order_by(answers.c.id.desc()).limit(1)).first()
        if last is None:
            return None
        return answer_from_row(last)

    def _answers(self, conn: Connection, student_id: int) -> list[Answer]:
        mine = select(answers).where(answers.c.student_id == student_id)
        rows = conn.execute(mine.order_by(answers.c.at, answers.c.id)).all()
        return [answer_from_row(r) for r in rows]

    def answers_of(self, code: str, token: str) -> list[Answer]:
        """The student's own answers, oldest first (the last per step is the one to show)."""
        code = class_code(code)
        return run(
            self.engine, lambda conn: self._answers(conn, self._student_row(conn, code, token).id)
        )

    def board(self, code: str, token: str) -> StudentBoard:
        """The student, their answers and the class's controls, read in one transaction: what
        every run of a student's page reads (a removed student's token is unknown)."""
        code = class_code(code)

        def work(conn: Connection) -> StudentBoard:
            row = self._student_row(conn, code, token)
            return StudentBoard(
                student_from_row(row), self._answers(conn, row.id), read_controls(conn, code)
            )

        return run(self.engine, work)

    def watch(self, code: str, token: str) -> Controls | None:
        """What an open student's page polls (one small transaction): the class's controls, or
        None once the student was removed (or the class is unknown)."""
        code = class_code(code)

        def work(conn: Connection) -> Controls | None:
            mine = select(students.c.id).where(
                students.c.token == str(token), students.c.class_code == code
            )
            if conn.execute(mine).first() is None:
                return None
            return read_controls(conn, code)

        return run(self.engine, work)

    def count(self, code: str) -> int:
        """How many answers class ``code`` has stored (no key: a number only)."""
        code = class_code(code)
        query = select(func.count()).select_from(answers).where(answers.c.class_code == code)
        return int(run(self.engine, lambda conn: conn.execute(query).scalar_one()))
