"""The class store: classes of a lesson, students and their graded answers in a database
(SQLAlchemy Core; SQLite by default, PostgreSQL by URL). Imports no Streamlit.

``vt.classroom(url=None)`` returns a ``ClassStore``; ``links`` builds the students' link of a
class and a teacher's one-time link, ``viewer_link`` a one-time read-only link. No link carries
a key (docs/classroom.md, "The teacher's keys").
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from viz_transformer import settings
from viz_transformer.classroom.database import engine_for, normalise_url
from viz_transformer.classroom.lessons import traced
from viz_transformer.classroom.rows import Answer, Controls, Student, StudentBoard, TeacherBoard
from viz_transformer.classroom.store import ClassStore

if TYPE_CHECKING:
    from viz_transformer.course.grading import TraceOf

LESSON_PATH, TEACHER_PATH = "lesson", "teacher"  # URL paths of pages/lesson.py, pages/teacher.py
ONCE = "once"  # the query parameter of a one-time link's token

__all__ = [
    "Answer",
    "ClassStore",
    "Controls",
    "Student",
    "StudentBoard",
    "TeacherBoard",
    "classroom",
    "links",
    "normalise_url",
    "viewer_link",
]


def classroom(url: str | None = None, traces: TraceOf = traced) -> ClassStore:
    """The class store in the database at ``url``.

    Args:
        url: a SQLAlchemy URL (``sqlite:///classes.sqlite3``,
            ``postgresql://user:password@host:5432/db``); None: ``VT_DATABASE_URL``, else one
            SQLite file in the cache folder (``settings.database_url()``).
        traces: ``(model name, sentence) -> Trace`` grading reads from; a server passes its
            cache of traces (the app: its pages' cache), by default every answer traces.

    Raises:
        ValueError: a bad URL. OperationalError (SQLAlchemy): a database that cannot be reached.
    """
    return ClassStore(engine_for(url or settings.database_url()), traces)


def links(base: str, code: str, once: str) -> tuple[str, str]:
    """``(students' link, teacher's one-time link)`` of class ``code`` on the app at ``base``
    (``http://host:8501``): ``BASE/lesson?class=CODE`` and ``BASE/teacher?class=CODE&once=TOKEN``
    (``once``: ``Access.one_time_link``; empty: the students' link alone is meant)."""
    base = base.rstrip("/")
    return (
        f"{base}/{LESSON_PATH}?{urlencode({'class': code})}",
        f"{base}/{TEACHER_PATH}?{urlencode({'class': code, ONCE: once})}",
    )


def viewer_link(base: str, code: str, once: str) -> str:
    """A one-time read-only link of class ``code`` (``once``: ``Access.read_only_link``):
    the Teacher page as the teacher's link opens it, without its controls."""
    return links(base, code, once)[1]
