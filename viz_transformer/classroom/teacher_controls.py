"""What the teacher changes in a class, with the teacher's key only (a read-only key changes
nothing): the pace, a pause, names hidden, a student removed, the class closed, a read-only key
made. Stored in the database, so every replica's students see a change on their next redraw."""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, delete, select

from viz_transformer.classroom import controls as class_controls
from viz_transformer.classroom.controls import Controls
from viz_transformer.classroom.database import run
from viz_transformer.classroom.schema import answers, students, visits
from viz_transformer.classroom.store_base import class_code, clean_name, key_hash, now
from viz_transformer.classroom.teacher_side import TeacherSide


class TeacherControls(TeacherSide):
    """The controls of a class: set with the teacher's key, read by anyone with the code."""

    def controls(self, code: str) -> Controls:
        """Class ``code``'s controls as stored now (no key: every student's page reads them).

        Raises:
            ValueError: unknown code.
        """
        code = class_code(code)
        self.lesson(code)  # an unknown code fails here
        return run(self.engine, lambda conn: class_controls.read(conn, code))

    def _set(self, code: str, key: str, **values: object) -> None:
        self._as_teacher(code, key, lambda conn, c: class_controls.write(conn, c, **values), True)

    def set_pace(self, code: str, key: str, pace: int | None) -> None:
        """Let students open steps 1 to ``pace`` (counted from 1, as on screen) and no further;
        None lifts it. A student past it is shown step ``pace`` and keeps every answer.

        Raises:
            ValueError: a pace that is not a step of the lesson.
        """
        steps = len(self.lesson(code).steps)
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

    def viewer_key(self, code: str, key: str) -> str:
        """A new read-only key for class ``code`` (a co-teacher's link: sees the class, changes
        nothing); a read-only key made before stops working. Only its hash is stored."""
        viewer = secrets.token_hex(16)
        self._set(code, key, viewer_hash=key_hash(viewer))
        return viewer

    def remove(self, code: str, key: str, student: int | str) -> str:
        """Remove a student (a test join, a mistaken name) with their answers and places; their
        page then asks them to join again. ``student``: their roster ``id``, or their name.

        Returns:
            The name of the student removed.

        Raises:
            ValueError: no such student, or a name that two students have (remove by id).
        """

        def work(conn: Connection, code: str) -> str:
            mine = select(students.c.id, students.c.name).where(students.c.class_code == code)
            if isinstance(student, int):
                found = conn.execute(mine.where(students.c.id == student)).all()
            else:
                wanted = clean_name(student).casefold()
                found = [r for r in conn.execute(mine).all() if r.name.casefold() == wanted]
            if not found:
                raise ValueError(f"no student {student!r} in class {code}.")
            if len(found) > 1:
                raise ValueError(
                    f"{len(found)} students are named {student!r}; remove one of "
                    "them on the Teacher page."
                )
            sid = found[0].id
            conn.execute(delete(answers).where(answers.c.student_id == sid))
            conn.execute(delete(visits).where(visits.c.student_id == sid))
            conn.execute(delete(students).where(students.c.id == sid))
            return found[0].name

        return self._as_teacher(code, key, work, change=True)
