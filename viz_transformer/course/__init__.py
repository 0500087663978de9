"""The course: lessons as YAML files of steps whose questions the lesson's model grades
(docs/lessons.md); the built-in lessons are in ``curriculum/``.

``question_kinds`` is the table of question kinds (fields, validation, grading, answer widget);
``files`` finds lesson files and loads them, ``shape`` reads a file's text with its shape validated
(``FILE:LINE`` problems), ``validation`` validates what a lesson asks of its model (``checks``:
the validators' interfaces a kind's row calls), ``grading`` grades an answer from the model's
trace at answer time (``graders``: each kind's grader; ``quantities``: the course's numbers;
``grading_caches``: where they are read, the caller's caches or the course's own).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_transformer import exports

# the public names, the one list (``exports.lazy``): imported on first use (PEP 562), so the
# records (Grade, Lesson) load without the grading and the model registry (PyTorch), and the
# class store's commands that read no lesson start without them (``class pause``)
if TYPE_CHECKING:
    from viz_transformer.course.files import lessons, load_lesson
    from viz_transformer.course.grading import GradingCaches, TraceOf, grade, traced, warm_traces
    from viz_transformer.course.lesson import Grade, Lesson, Question, Step
    from viz_transformer.course.question_kinds import QUESTION_KINDS, KindRule
    from viz_transformer.course.shape import LessonError, read_lesson
    from viz_transformer.course.validation import validate_lesson

__getattr__, __dir__, __all__, LAZY = exports.lazy(__name__, __file__)
