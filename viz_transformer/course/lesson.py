"""What a lesson file holds once read (``Lesson``, its ``Step``s and their ``Question``s) and what
grading an answer gives (``Grade``): frozen records, no behaviour."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TOLERANCE = 0.02  # relative, for ``number`` questions


@dataclass(frozen=True)
class Question:
    """A step's question (its ``check:`` in the file), whose answer the lesson's model gives at
    grading time (``vt.grade``).

    Attributes:
        kind: a key of ``question_kinds.QUESTION_KINDS`` (``head``, ``token``, ``number``, ...).
        args: its fields as written in the file, without ``kind`` and ``question``:
            ``head``: attention, sentence, query, key, [layers]; ``token``: sentence, step;
            ``number``: quantity, args, [tolerance]; ``choice``: options, correct; ``text``: none.
        model: the lesson's model name: every answer is graded on it.
        prompt: the text above the answer box (the file's ``question:``), or None (the step's
            title asks it).
        where: ``FILE:LINE`` of the question in its lesson file.
    """

    kind: str
    args: Mapping[str, Any]
    model: str
    prompt: str | None = None
    where: str = ""

    @property
    def options(self) -> tuple[str, ...]:
        """A ``choice`` question's options (empty for other kinds)."""
        return tuple(self.args.get("options", ())) if self.kind == "choice" else ()


@dataclass(frozen=True)
class Step:
    """One step of a lesson.

    Attributes:
        title: the step's heading.
        text: Markdown (LaTeX in ``$...$``) to read.
        page: the page file name (``attention_maps`` for ``pages/attention_maps.py``) the step
            opens, or None.
        view: URL keys of that page's view (``sentence``, ``kind``, ``layer``, ``head``, ...).
        question: the step's question (its ``check:`` in the file), or None for a step to read
            only.
    """

    title: str
    text: str = ""
    page: str | None = None
    view: Mapping[str, Any] = field(default_factory=dict)
    question: Question | None = None


@dataclass(frozen=True)
class Lesson:
    """A lesson file, read and validated for shape (``vt.load_lesson``).

    Attributes:
        name: the file's stem (``paper_tour``): what ``vt.lessons()`` lists and ``?lesson=`` names.
        title: the lesson's title.
        model: the model every step's view and question uses (a ``vt.available_models()`` name).
        steps: the steps in order; a student's step number is the 0-based index here.
        source: the file's text (a class keeps it, so any replica grades the same lesson).
        path: the file read, or None for a lesson read from text.
        order: its place in a course (1 first), or None for a lesson outside one.
        topic: what part of the paper or the app it teaches, "" if not given.
        minutes: about how long it takes, or None.
        goals: what a student can do after it, one sentence each.
        prerequisites: names of the lessons (``vt.lessons()``) to follow first.
    """

    name: str
    title: str
    model: str
    steps: tuple[Step, ...]
    source: str
    path: Path | None = None
    order: int | None = None
    topic: str = ""
    minutes: int | None = None
    goals: tuple[str, ...] = ()
    prerequisites: tuple[str, ...] = ()


@dataclass(frozen=True)
class Grade:
    """The model's verdict on one answer.

    Attributes:
        correct: True or False; None for a ``text`` question (stored, not graded).
        expected: what the model says, as text ("L1 H3", "estudante", "0.6234", an option).
        feedback: one or two sentences for the student.
        readable: False when the answer could not be read at all ("L one"): ``correct`` is then
            False and ``feedback`` says how to write it.
    """

    correct: bool | None
    expected: str
    feedback: str
    readable: bool = True
