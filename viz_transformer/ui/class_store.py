"""The server's class store: one ``ClassStore`` per server (``VT_DATABASE_URL``, else SQLite in
the cache folder) that grades from the pages' caches; a class's lesson, its graded sentences
traced meanwhile; and how a store error reads in a page (``message``, ``or_stop``)."""

from __future__ import annotations

import functools

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

import viz_transformer as vt
from viz_transformer.ui import head_caches, widgets

# what a store call may raise: bad input (an unknown code or token), a wrong key (OSError's
# PermissionError), a lesson that cannot be graded, a database that cannot be reached
STORE_ERRORS = (*widgets.LOAD_ERRORS, SQLAlchemyError)


@st.cache_resource(show_spinner=False)
def store() -> vt.ClassStore:
    """The class store of this server (``VT_DATABASE_URL``, else SQLite in the cache folder),
    grading from the pages' caches (``head_caches.grading_caches``): one trace, ablation, role
    score or logit lens per sentence per server."""
    return vt.classroom(traces=head_caches.grading_caches())


def class_lesson(code: str) -> vt.Lesson:
    """The lesson class ``code`` runs; this server traces its graded sentences meanwhile.
    Raises ``ValueError`` for an unknown code."""
    found = store().lessons.lesson(code)
    store().lessons.warm(code)
    return found


def message(exc: BaseException) -> str:
    """What a store error says to a student or teacher (a database's error: its first line)."""
    if isinstance(exc, SQLAlchemyError):
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return f"The class database cannot be reached right now ({first}). Try again in a moment."
    return str(exc)


# ``func(*args)`` (a store call), or its error as a message in the page and stop: the one
# ``widgets.or_stop``, with a store's errors and words
or_stop = functools.partial(widgets.or_stop, errors=STORE_ERRORS, say=message)
