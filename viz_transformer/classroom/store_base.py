"""What both sides of the class store share: the records it returns (``Student``, ``Answer``),
how codes, names and times are read, and ``StoreBase``: the engine, and each class's lesson read
once per process. The teacher's side is ``classroom/teacher_side.py``, the students' side
``classroom/student_side.py``; ``ClassStore`` (``classroom/store.py``) is both."""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Engine, select

from viz_transformer.classroom.database import run
from viz_transformer.classroom.schema import NAME_CHARS, classes
from viz_transformer.course import (
    Grade,
    Lesson,
    TraceOf,
    read_lesson,
    traced,
    warm_traces,
)


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


def now() -> datetime:
    """The time now, in UTC."""
    return datetime.now(UTC)


def utc(value: datetime) -> datetime:
    """A stored time as UTC (SQLite gives it back without its zone)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def class_code(code: str) -> str:
    """A class code as stored: capitals, no spaces (a student may type it in lower case)."""
    return "".join(str(code).split()).upper()


def key_hash(key: str) -> str:
    """What the database keeps of a key: its SHA-256, in hex."""
    return hashlib.sha256(str(key).encode()).hexdigest()


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


class StoreBase:
    """The engine, the lessons of its classes and where answers are graded from; safe to share
    between threads and replicas.

    Args:
        engine: the database's engine (``database.engine_for``).
        traces: ``(model name, sentence) -> Trace`` that grading reads the model's answers
            from: the app passes its pages' cache (``ui/caches.trace``); the default traces at
            every answer (``grading.traced``).
    """

    def __init__(self, engine: Engine, traces: TraceOf = traced) -> None:
        self.engine, self.traces = engine, traces
        self._lessons: dict[str, Lesson] = {}  # code -> its lesson (a class's never changes)
        self._lock = threading.Lock()
        self._warmed: set[str] = set()  # the classes warm() has started tracing

    def __repr__(self) -> str:
        return f"ClassStore({self.engine.url.render_as_string(hide_password=True)})"

    def _remember(self, code: str, lesson: Lesson) -> None:
        with self._lock:
            self._lessons[code] = lesson

    def lesson(self, code: str) -> Lesson:
        """The lesson class ``code`` runs (read from the database once per process).

        Raises:
            ValueError: no class with that code.
        """
        code = class_code(code)
        with self._lock:
            if code in self._lessons:
                return self._lessons[code]
        query = select(classes.c.lesson_name, classes.c.lesson_source).where(classes.c.code == code)
        row = run(self.engine, lambda conn: conn.execute(query).first())
        if row is None:
            raise ValueError(f"no class with code {code!r}; check the code.")
        lesson = read_lesson(row.lesson_source, row.lesson_name, f"class {code}")
        self._remember(code, lesson)
        return lesson

    def warm(self, code: str) -> None:
        """Ask the store's ``traces`` for the sentences class ``code`` is graded on in a
        background thread, once per store, so with a cache its first answers wait for no
        forward pass (and for no model load in any case) (a server calls it when a page
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
        work = (lesson, self.traces, keep_going)
        threading.Thread(target=warm_traces, args=work, name="warm-traces").start()

    def _step(self, code: str, step: int) -> Lesson:
        """Class ``code``'s lesson, once ``step`` (0-based) is known to be one of its steps."""
        lesson = self.lesson(code)
        if not isinstance(step, int) or not 0 <= step < len(lesson.steps):
            last = len(lesson.steps) - 1
            raise ValueError(f"step {step!r} does not exist: the lesson has steps 0 to {last}.")
        return lesson
