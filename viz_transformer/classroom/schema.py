"""The class store's tables (SQLAlchemy Core): a class, its students, the steps each opened,
every answer given, and the teacher's controls of the class. Times are UTC.

A table added later (``vt_class_controls``) is created by ``create_all`` on a database made
before it, and a class without a row there has the default controls: existing SQLite and
PostgreSQL databases need no migration step."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

NAME_CHARS = 40  # a student's display name
ANSWER_CHARS = 2000  # an answer as typed (a free-text answer is a few sentences)

metadata = MetaData()

classes = Table(
    "vt_classes",
    metadata,
    Column("code", String(16), primary_key=True),  # what students type or follow in a link
    Column("lesson_name", String(200), nullable=False),
    Column("lesson_source", Text, nullable=False),  # the lesson file's text: any replica grades it
    Column("key_hash", String(64), nullable=False),  # sha256 of the teacher's key, never the key
    Column("created_at", DateTime(timezone=True), nullable=False),
)

students = Table(
    "vt_students",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token", String(64), nullable=False, unique=True),  # in the student's URL
    Column("class_code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("name", String(NAME_CHARS), nullable=False),
    Column("place", Integer, nullable=False, default=0),  # the step last opened
    Column("joined_at", DateTime(timezone=True), nullable=False),
    Column("seen_at", DateTime(timezone=True), nullable=False),
)

visits = Table(  # the first time each student opened each step ("reached"; answer times)
    "vt_visits",
    metadata,
    Column("student_id", Integer, ForeignKey("vt_students.id"), primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("opened_at", DateTime(timezone=True), nullable=False),
)

answers = Table(
    "vt_answers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class_code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("student_id", Integer, ForeignKey("vt_students.id"), nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("answer", Text, nullable=False),
    Column("correct", Boolean, nullable=True),  # None: a free-text answer, not graded
    Column("expected", Text, nullable=False),  # what the model said when it was graded
    Column("feedback", Text, nullable=False),
    Column("seconds", Float, nullable=True),  # from first opening the step to this answer
    Column("at", DateTime(timezone=True), nullable=False),
)

controls = Table(  # the teacher's controls of a class; no row: no pace, not paused, names shown
    "vt_class_controls",
    metadata,
    Column("code", String(16), ForeignKey("vt_classes.code"), primary_key=True),
    Column("pace", Integer, nullable=True),  # the last step students may open, from 1; None: all
    Column("paused", Boolean, nullable=False, default=False),
    Column("hide_names", Boolean, nullable=False, default=False),
    Column("closed_at", DateTime(timezone=True), nullable=True),  # None: open
    Column("viewer_hash", String(64), nullable=True),  # sha256 of the read-only key, if made
    Column("changed_at", DateTime(timezone=True), nullable=False),
)
