"""The teacher's side of the class store: open a class, and read it with the teacher's key (every
answer, the roster, the per-step funnel, the most common wrong answers). Its tables number steps
from 1, as the screens do (``reports.py``)."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pandas as pd
from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from viz_transformer.classroom import controls as class_controls
from viz_transformer.classroom import reports
from viz_transformer.classroom.database import run
from viz_transformer.classroom.schema import classes
from viz_transformer.classroom.store_base import StoreBase, class_code, key_hash, now
from viz_transformer.course import Lesson, load_lesson

CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or off a projector
CODE_LENGTH = 6
TEACHER, VIEWER = "teacher", "viewer"  # what a key lets one do: everything, or read only
T = TypeVar("T")


class TeacherSide(StoreBase):
    """What the teacher does: every method but ``create`` takes the class's key and raises
    ``PermissionError`` for a wrong one and ``ValueError`` for an unknown class code. The
    tables also take the class's read-only key; the controls (``teacher_controls.py``) do not."""

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
            self._remember(code, lesson)  # no warm-up: the creator may be a command about to exit
            return code, key
        raise RuntimeError("could not draw a free class code; try again.")

    def _authorise(self, conn: Connection, code: str, key: str) -> str:
        found = conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).first()
        if found is None:
            raise ValueError(f"no class with code {code!r}; check the code.")
        if hmac.compare_digest(found.key_hash, key_hash(key)):
            return TEACHER
        viewer = class_controls.viewer_hash(conn, code)
        if viewer is not None and hmac.compare_digest(viewer, key_hash(key)):
            return VIEWER
        raise PermissionError("wrong teacher key for this class.")

    def check_key(self, code: str, key: str) -> str:
        """``"teacher"`` when ``key`` is the teacher's key of class ``code``, ``"viewer"`` when
        it is its read-only key (``viewer_key``: sees the class, changes nothing).

        Raises:
            ValueError: unknown code. PermissionError: neither key.
        """
        return self._as_teacher(code, key, lambda conn, code: None, role=True)

    def _as_teacher(
        self,
        code: str,
        key: str,
        work: Callable[[Connection, str], T],
        change: bool = False,
        role: bool = False,
    ) -> T:
        """``work(conn, code)`` once ``key`` is the class's teacher key, or its read-only key
        when nothing changes; ``role``: return the key's role instead."""
        code = class_code(code)

        def checked(conn: Connection) -> T:
            found = self._authorise(conn, code, key)
            if change and found != TEACHER:
                raise PermissionError("a read-only key sees the class but changes nothing.")
            done = work(conn, code)
            return found if role else done  # type: ignore[return-value]

        return run(self.engine, checked, change)

    def answers(self, code: str, key: str) -> pd.DataFrame:
        """Every answer of the class, oldest first: columns ``student`` (display name), ``step``
        (from 1), ``answer`` (as typed), ``correct`` (nullable boolean: NA for free text),
        ``seconds`` (from first opening the step to answering), ``at`` (UTC)."""
        return self._as_teacher(code, key, reports.answer_table)

    def roster(self, code: str, key: str) -> pd.DataFrame:
        """Who joined, in joining order: ``id``, ``student``, ``pseudonym`` (shown instead of the
        name when names are hidden), ``step`` (the step each has open, from 1), ``answered`` and
        ``correct`` (how many steps), ``joined`` and ``seen`` (UTC)."""
        return self._as_teacher(code, key, reports.roster_table)

    def funnel(self, code: str, key: str) -> pd.DataFrame:
        """Per step of the lesson: ``step`` (from 1), ``title``, ``kind`` (check kind or None),
        ``reached`` (students who opened it), ``answered``, ``correct`` (students with a correct
        answer; NA for steps without a graded check)."""
        lesson = self.lesson(code)
        return self._as_teacher(code, key, lambda c, k: reports.funnel_table(c, k, lesson))

    def wrong_answers(self, code: str, key: str, top: int = 3) -> pd.DataFrame:
        """The most common wrong answers per step (compared ignoring case and spaces):
        ``step`` (from 1), ``answer`` (as first typed), ``students`` (how many gave it); at most
        ``top`` per step."""
        return self._as_teacher(code, key, lambda c, k: reports.wrong_table(c, k, top))
