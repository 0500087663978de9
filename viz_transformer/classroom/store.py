"""``ClassStore``: classes, students and their answers in a database (``vt.classroom(url)``).

A student's place (the step last opened) and every answer live in the database, not in a
replica's memory, so a replica may die and the student resumes on another. Every value goes in
through bound parameters; names and answers are stored as typed and must be escaped when shown.
Grading happens here at answer time, from the lesson's model (``vt.grade``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pandas as pd
from sqlalchemy import Connection, Engine, Row, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from viz_transformer.analysis.lessons import Grade, Lesson, grade, load_lesson, read_lesson
from viz_transformer.analysis.lessons.grading import warm_traces
from viz_transformer.classroom import reports
from viz_transformer.classroom.engines import run
from viz_transformer.classroom.schema import (
    ANSWER_CHARS,
    NAME_CHARS,
    answers,
    classes,
    students,
    visits,
)

CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or off a projector
CODE_LENGTH = 6
T = TypeVar("T")


@dataclass(frozen=True)
class Student:
    """One student of a class, as ``ClassStore.student`` returns it.

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
        grade: ``correct``, ``expected`` and ``feedback`` as given at answer time.
        at: when (UTC).
    """

    step: int
    answer: str
    grade: Grade
    at: datetime


def _now() -> datetime:
    return datetime.now(UTC)


def utc(value: datetime) -> datetime:
    """A stored time as UTC (SQLite gives it back without its zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def class_code(code: str) -> str:
    """A class code as stored: capitals, no spaces (a student may type it in lower case)."""
    return "".join(str(code).split()).upper()


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


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


class ClassStore:
    """Classes of a lesson in one database; safe to share between threads and replicas.

    Teacher methods take the class's key and raise ``PermissionError`` for a wrong one;
    every method raises ``ValueError`` for an unknown class code or student token.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lessons: dict[str, Lesson] = {}  # code -> its lesson (a class's never changes)
        self._lock = threading.Lock()
        self._warmed: set[str] = set()  # the classes warm() has started tracing

    def __repr__(self) -> str:
        return f"ClassStore({self.engine.url.render_as_string(hide_password=True)})"

    # ---- the teacher ------------------------------------------------------------------------
    def create(self, lesson: Lesson | str | Path) -> tuple[str, str]:
        """Open a class on ``lesson`` (a ``Lesson``, a lesson name or a file path).

        Returns:
            ``(code, teacher_key)``: the code students join with, and the key the teacher's
            page and ``answers`` need (only its hash is stored: keep it).
        """
        lesson = lesson if isinstance(lesson, Lesson) else load_lesson(lesson)
        key = secrets.token_hex(16)  # never starts with "-" (a command line would read an option)
        for _ in range(20):  # a code already taken: draw another
            code = "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))
            row = {"code": code, "lesson_name": lesson.name, "lesson_source": lesson.source,
                   "key_hash": _hash(key), "created_at": _now()}  # fmt: skip
            try:
                run(self.engine, lambda conn, row=row: conn.execute(classes.insert(), row), True)
            except IntegrityError:
                continue
            with self._lock:  # no warm-up here: the creator may be a command about to exit
                self._lessons[code] = lesson
            return code, key
        raise RuntimeError("could not draw a free class code; try again.")

    def _authorise(self, conn: Connection, code: str, key: str) -> None:
        found = conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).first()
        if found is None:
            raise ValueError(f"no class with code {code!r}; check the code.")
        if not hmac.compare_digest(found.key_hash, _hash(str(key))):
            raise PermissionError("wrong teacher key for this class.")

    def check_key(self, code: str, key: str) -> None:
        """Nothing when ``key`` is the teacher's key of class ``code``.

        Raises:
            ValueError: unknown code. PermissionError: wrong key.
        """
        self._as_teacher(code, key, lambda conn, code: None)

    def _as_teacher(self, code: str, key: str, read: Callable[[Connection, str], T]) -> T:
        code = class_code(code)

        def work(conn: Connection) -> T:
            self._authorise(conn, code, key)
            return read(conn, code)

        return run(self.engine, work)

    def answers(self, code: str, key: str) -> pd.DataFrame:
        """Every answer of the class, oldest first: columns ``student`` (display name), ``step``
        (0-based), ``answer`` (as typed), ``correct`` (nullable boolean: NA for free text),
        ``seconds`` (from first opening the step to answering), ``at`` (UTC)."""
        return self._as_teacher(code, key, reports.answer_table)

    def roster(self, code: str, key: str) -> pd.DataFrame:
        """Who joined, in joining order: ``id``, ``student``, ``step`` (the step each has open),
        ``answered`` and ``correct`` (how many steps), ``joined`` and ``seen`` (UTC)."""
        return self._as_teacher(code, key, reports.roster_table)

    def funnel(self, code: str, key: str) -> pd.DataFrame:
        """Per step of the lesson: ``step``, ``title``, ``kind`` (check kind or None),
        ``reached`` (students who opened it), ``answered``, ``correct`` (students with a correct
        answer; NA for steps without a graded check)."""
        lesson = self.lesson(code)
        return self._as_teacher(code, key, lambda c, k: reports.funnel_table(c, k, lesson))

    def wrong_answers(self, code: str, key: str, top: int = 3) -> pd.DataFrame:
        """The most common wrong answers per step (compared ignoring case and spaces):
        ``step``, ``answer`` (as first typed), ``count``; at most ``top`` per step."""
        return self._as_teacher(code, key, lambda c, k: reports.wrong_table(c, k, top))

    # ---- the students -----------------------------------------------------------------------
    def lesson(self, code: str) -> Lesson:
        """The lesson class ``code`` runs (read from the database once per process)."""
        code = class_code(code)
        with self._lock:
            if code in self._lessons:
                return self._lessons[code]
        query = select(classes.c.lesson_name, classes.c.lesson_source).where(classes.c.code == code)
        row = run(self.engine, lambda conn: conn.execute(query).first())
        if row is None:
            raise ValueError(f"no class with code {code!r}; check the code.")
        lesson = read_lesson(row.lesson_source, row.lesson_name, f"class {code}")
        with self._lock:
            self._lessons[code] = lesson
        return lesson

    def warm(self, code: str) -> None:
        """Trace the sentences class ``code`` is graded on in a background thread, once per
        store, so its first answers wait for no forward pass (a server calls it when a page
        opens the class; ``lesson`` does not, as a script reading a class may be about to exit).
        The thread is not a daemon (PyTorch mid-call in a daemon thread aborts the exiting
        process) and stops after its current sentence once the main thread has ended."""
        code = class_code(code)
        lesson = self.lesson(code)
        with self._lock:
            if code in self._warmed:
                return
            self._warmed.add(code)
        keep_going = threading.main_thread().is_alive
        threading.Thread(target=warm_traces, args=(lesson, keep_going), name="warm-traces").start()

    def join(self, code: str, name: str) -> str:
        """Add a student named ``name`` to class ``code``; their token (put it in their URL).

        Raises:
            ValueError: unknown code, or a name with nothing to show.
        """
        code = class_code(code)
        name, now = clean_name(name), _now()
        self.lesson(code)  # an unknown code fails here
        token = secrets.token_urlsafe(16)
        row = {"token": token, "class_code": code, "name": name, "place": 0,
               "joined_at": now, "seen_at": now}  # fmt: skip
        run(self.engine, lambda conn: conn.execute(students.insert(), row), True)
        return token

    def _student_row(self, conn: Connection, code: str, token: str) -> Row:
        code = class_code(code)
        row = conn.execute(
            select(students).where(students.c.token == str(token), students.c.class_code == code)
        ).first()
        if row is None:
            self.lesson(code)  # says so when the code is the unknown one
            raise ValueError("unknown student token for this class; join again with your name.")
        return row

    def student(self, code: str, token: str) -> Student:
        """The student with ``token`` in class ``code``: name, place and when they joined."""
        code = class_code(code)
        row = run(self.engine, lambda conn: self._student_row(conn, code, token))
        return Student(row.name, row.place, utc(row.joined_at))

    def place(self, code: str, token: str) -> int:
        """The step the student last opened (0 after joining): where a reload resumes."""
        code = class_code(code)
        return self.student(code, token).place

    def _step(self, code: str, step: int) -> Lesson:
        code = class_code(code)
        lesson = self.lesson(code)
        if not isinstance(step, int) or not 0 <= step < len(lesson.steps):
            raise ValueError(f"step {step!r} does not exist: the lesson has steps 0 to "
                             f"{len(lesson.steps) - 1}.")  # fmt: skip
        return lesson

    def _visit(self, conn: Connection, student_id: int, step: int, now: datetime) -> None:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        row = {"student_id": student_id, "step": step, "opened_at": now}
        conn.execute(dialect.insert(visits).values(row).on_conflict_do_nothing())

    def move(self, code: str, token: str, step: int) -> None:
        """Record that the student opened ``step``: their place, and the first time they
        reached it (Next and Back call this; answering does not move a student)."""
        code = class_code(code)
        self._step(code, step)
        now = _now()

        def work(conn: Connection) -> None:
            row = self._student_row(conn, code, token)
            self._visit(conn, row.id, step, now)
            conn.execute(update(students).where(students.c.id == row.id)
                         .values(place=step, seen_at=now))  # fmt: skip

        run(self.engine, work, True)

    def submit(self, code: str, token: str, step: int, answer: str) -> Grade:
        """Grade ``answer`` to ``step`` (0-based) on the lesson's model and store it.

        Returns:
            The ``Grade`` (stored with the answer; every answer is kept, retries too).

        Raises:
            ValueError: unknown code or token, a step that does not exist or has no question,
                an answer longer than ``ANSWER_CHARS``.
        """
        code = class_code(code)
        check = self._step(code, step).steps[step].check
        if check is None:
            raise ValueError(f"step {step} has no question to answer.")
        answer = str(answer)
        if len(answer) > ANSWER_CHARS:
            raise ValueError(f"an answer may have at most {ANSWER_CHARS} characters.")
        result = grade(check, answer)  # before the transaction: no lock held while grading
        now = _now()

        def work(conn: Connection) -> None:
            row = self._student_row(conn, code, token)
            self._visit(conn, row.id, step, now)
            opened = conn.execute(select(visits.c.opened_at).where(
                visits.c.student_id == row.id, visits.c.step == step)).scalar_one()  # fmt: skip
            conn.execute(answers.insert(), {
                "class_code": code, "student_id": row.id, "step": step, "answer": answer,
                "correct": result.correct, "expected": result.expected,
                "feedback": result.feedback, "at": now,
                "seconds": max((now - utc(opened)).total_seconds(), 0.0),
            })  # fmt: skip
            conn.execute(update(students).where(students.c.id == row.id).values(seen_at=now))

        run(self.engine, work, True)
        return result

    def answers_of(self, code: str, token: str) -> list[Answer]:
        """The student's own answers, oldest first (the last per step is the one to show)."""
        code = class_code(code)

        def work(conn: Connection) -> list[Answer]:
            row = self._student_row(conn, code, token)
            rows = conn.execute(select(answers).where(answers.c.student_id == row.id)
                                .order_by(answers.c.at, answers.c.id)).all()  # fmt: skip
            return [Answer(r.step, r.answer, Grade(r.correct, r.expected, r.feedback),
                           utc(r.at)) for r in rows]  # fmt: skip

        return run(self.engine, work)

    def count(self, code: str) -> int:
        """How many answers class ``code`` has stored (no key: a number only)."""
        code = class_code(code)
        query = select(func.count()).select_from(answers).where(answers.c.class_code == code)
        return int(run(self.engine, lambda conn: conn.execute(query).scalar_one()))
