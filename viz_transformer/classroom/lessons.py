"""``ClassLessons``: the lesson each class runs, read from the database once per process (a
class's lesson never changes), and the background warm-up that traces the sentences a class is
graded on before its first answers."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import yaml
from sqlalchemy import Engine, Row, select

from viz_transformer import course
from viz_transformer.classroom.access import class_code
from viz_transformer.classroom.database import run
from viz_transformer.classroom.schema import classes
from viz_transformer.course.lesson import Lesson

if TYPE_CHECKING:
    from viz_transformer.course.grading import TraceOf
    from viz_transformer.records.trace import Trace


def traced(model_name: str, sentence: str) -> Trace:
    """``course.traced`` (a fresh trace of ``sentence`` on the model), whose module (PyTorch)
    loads when the first answer is graded: a class command that grades nothing starts without
    it (``python -m viz_transformer class pause``, bench/bench_class_commands.py)."""
    return course.traced(model_name, sentence)


class ClassLessons:
    """The lessons of the classes in one database, kept once read; safe to share between
    threads.

    Args:
        engine: the database's engine (``database.engine_for``).
        traces: ``(model name, sentence) -> Trace`` that ``warm`` asks ahead of the answers
            (the same the students' answers are graded from).
    """

    def __init__(self, engine: Engine, traces: TraceOf) -> None:
        self.engine, self.traces = engine, traces
        self._lessons: dict[str, Lesson] = {}  # code -> its lesson
        self._lock = threading.Lock()
        self._warmed: set[str] = set()  # the classes warm() has started tracing

    def remember(self, code: str, lesson: Lesson) -> None:
        """Keep ``lesson`` as class ``code``'s (a class just created: no read needed)."""
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
        row = self._stored(code)
        lesson = course.read_lesson(row.lesson_source, row.lesson_name, f"class {code}")
        self.remember(code, lesson)
        return lesson

    def _stored(self, code: str) -> Row:
        query = select(classes.c.lesson_name, classes.c.lesson_source).where(classes.c.code == code)
        row = run(self.engine, lambda conn: conn.execute(query).first())
        if row is None:
            raise ValueError(f"no class with code {code!r}; check the code.")
        return row

    def steps(self, code: str) -> int:
        """How many steps class ``code``'s lesson has: the kept lesson's, else counted in its
        stored text (validated when the class was created) without reading the lesson whole,
        whose check of its model loads PyTorch (``class pace`` starts without it).

        Raises:
            ValueError: no class with that code.
        """
        code = class_code(code)
        with self._lock:
            if code in self._lessons:
                return len(self._lessons[code].steps)
        return len(yaml.safe_load(self._stored(code).lesson_source)["steps"])

    def with_step(self, code: str, step: int) -> Lesson:
        """Class ``code``'s lesson, once ``step`` (0-based) is known to be one of its steps.

        Raises:
            ValueError: unknown code, or a step the lesson does not have.
        """
        lesson = self.lesson(code)
        if not isinstance(step, int) or not 0 <= step < len(lesson.steps):
            last = len(lesson.steps) - 1
            raise ValueError(f"step {step!r} does not exist: the lesson has steps 0 to {last}.")
        return lesson

    def warm(self, code: str) -> None:
        """Ask ``traces`` for the sentences class ``code`` is graded on in a background thread,
        once per process, so with a cache its first answers wait for no forward pass (and for no
        model load in any case) (a server calls it when a page opens the class; ``lesson`` does
        not, as a script reading a class may be about to exit). The thread is not a daemon
        (PyTorch mid-call in a daemon thread aborts the exiting process) and stops after its
        current sentence once the main thread has ended."""
        code = class_code(code)
        lesson = self.lesson(code)
        with self._lock:
            if code in self._warmed:
                return
            self._warmed.add(code)
        keep_going = threading.main_thread().is_alive
        work = (lesson, self.traces, keep_going)
        threading.Thread(target=course.warm_traces, args=work, name="warm-traces").start()
