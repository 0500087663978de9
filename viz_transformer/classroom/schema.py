"""The class store's tables (SQLAlchemy Core): a class, its students, the steps each opened and
every answer given. Times are UTC."""

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
