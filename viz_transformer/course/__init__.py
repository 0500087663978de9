"""The course: lessons as YAML files of steps whose questions the lesson's model grades
(docs/lessons.md); the built-in lessons are in ``curriculum/``.

``kinds`` is the table of question kinds (fields, validation, grading, answer widget); ``files``
finds lesson files and loads them, ``shape`` reads a file's text with its shape validated
(``FILE:LINE`` problems), ``validation`` validates what a lesson asks of its model (``checks``:
the validators' interfaces a kind's row calls), ``grading`` grades an answer from the model's
trace at answer time (``graders``: each kind's grader; ``quantities``: the course's numbers;
``sources``: where they are read, the caller's caches or the course's own).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> its module, imported on first use (PEP 562): the records (Grade, Lesson) load
# without the grading and the model registry (PyTorch), so the class store's commands that
# read no lesson start without them (``python -m viz_transformer class pause``)
LAZY = {
    "lessons": "files",
    "load_lesson": "files",
    "Sources": "grading",
    "TraceOf": "grading",
    "grade": "grading",
    "traced": "grading",
    "warm_traces": "grading",
    "QUESTION_KINDS": "kinds",
    "KindRule": "kinds",
    "Grade": "records",
    "Lesson": "records",
    "Question": "records",
    "Step": "records",
    "LessonError": "shape",
    "read_lesson": "shape",
    "validate_lesson": "validation",
}

if TYPE_CHECKING:
    from viz_transformer.course.files import lessons, load_lesson
    from viz_transformer.course.grading import Sources, TraceOf, grade, traced, warm_traces
    from viz_transformer.course.kinds import QUESTION_KINDS, KindRule
    from viz_transformer.course.records import Grade, Lesson, Question, Step
    from viz_transformer.course.shape import LessonError, read_lesson
    from viz_transformer.course.validation import validate_lesson

__all__ = [
    "QUESTION_KINDS",
    "Grade",
    "KindRule",
    "Lesson",
    "LessonError",
    "Question",
    "Sources",
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


def __getattr__(name: str) -> Any:
    """A name of ``LAZY``, imported from its module on first use and kept in this package."""
    if name not in LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{LAZY[name]}"), name)
    globals()[name] = value
    return value
