"""Lessons: YAML files of steps whose questions the lesson's model grades (docs/lessons.md).

``files`` finds and reads them (shape validated, ``FILE:LINE`` problems), ``validation``
validates what they ask of the model, ``grading`` grades an answer from the model's trace at
answer time.
"""

from viz_transformer.analysis.lessons.files import LessonError, lessons, load_lesson, read_lesson
from viz_transformer.analysis.lessons.grading import grade, lesson_trace
from viz_transformer.analysis.lessons.records import (
    CHECK_KINDS,
    Check,
    CheckKind,
    Grade,
    Lesson,
    Step,
)
from viz_transformer.analysis.lessons.validation import validate_lesson

__all__ = [
    "CHECK_KINDS",
    "Check",
    "CheckKind",
    "Grade",
    "Lesson",
    "LessonError",
    "Step",
    "grade",
    "lesson_trace",
    "lessons",
    "load_lesson",
    "read_lesson",
    "validate_lesson",
]
