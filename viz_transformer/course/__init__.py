"""Lessons: YAML files of steps whose questions the lesson's model grades (docs/lessons.md).

``kinds`` is the table of check kinds (fields, validation, grading, answer widget); ``files``
finds lesson files and loads them, ``shape`` reads a file's text with its shape validated
(``FILE:LINE`` problems), ``validation`` validates what a lesson asks of its model, ``grading``
grades an answer from the model's trace at answer time (``graders``: each kind's grader).
"""

from viz_transformer.course.files import lessons, load_lesson
from viz_transformer.course.grading import TraceOf, grade, traced, warm_traces
from viz_transformer.course.kinds import CHECK_TABLE, KindRule
from viz_transformer.course.records import (
    CHECK_KINDS,
    Check,
    CheckKind,
    Grade,
    Lesson,
    Step,
)
from viz_transformer.course.shape import LessonError, read_lesson
from viz_transformer.course.validation import validate_lesson

__all__ = [
    "CHECK_KINDS",
    "CHECK_TABLE",
    "Check",
    "CheckKind",
    "Grade",
    "KindRule",
    "Lesson",
    "LessonError",
    "Step",
    "TraceOf",
    "grade",
    "lessons",
    "load_lesson",
    "read_lesson",
    "traced",
    "validate_lesson",
    "warm_traces",
]
