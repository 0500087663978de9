"""The question kinds of a lesson in one table (``QUESTION_KINDS``, the one place their names are
written): for each kind, the fields a lesson file gives it, what validating it checks (its shape
in the file, then on the model), how an answer is graded, and the answer widget that takes it (by
name: ``ui/answer_widgets.py`` looks it up). A new kind is a row here and, where no widget fits,
a widget there.

A row's checks are written against the validators' interfaces (``checks.ShapeCheck``,
``checks.ModelCheck``): a row says what to check, ``shape.py`` and ``validation.py`` say how a
problem is located and worded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from viz_transformer.course.checks import ModelCheck, ShapeCheck
from viz_transformer.course.lesson import Grade, Question
from viz_transformer.course.located import Path_
from viz_transformer.course.quantities import COURSE_QUANTITIES, arg_problems

if TYPE_CHECKING:
    from viz_transformer.course.grading_caches import TraceOf

NUMBER_FIELDS: dict[str, tuple[str, ...]] = {  # a number question's quantity -> its args
    "attention_weight": ("sentence", "attention", "layer", "head", "query", "key"),
    "row_entropy": ("sentence", "attention", "layer", "head", "query"),
    "pe_value": ("position", "dim", "d_model"),
} | {name: q.fields for name, q in COURSE_QUANTITIES.items()}


@dataclass(frozen=True)
class KindRule:
    """How one question kind is read, validated, graded and answered.

    Attributes:
        required: its fields besides ``kind`` and ``question``, required in the file.
        optional: its optional fields.
        grade: ``(question, answer, traces) -> Grade`` for an answer stripped and not empty.
        widget: the name of the answer widget that takes it (a function of
            ``ui/answer_widgets.py``, which looks it up in its ``WIDGETS`` by this name).
        label: the answer box's label, where the widget has a box to type in.
        placeholder: the example shown in an empty box.
        graded: False for a kind whose answers are kept, not graded (``correct`` None).
        shape: further checks of its fields in the file (beyond ``ShapeCheck.fields``), or None.
        on_model: what validating it checks on the model, or None (nothing to check there).
        sentence: the sentence an answer is graded on (traced ahead by ``warm_traces``), or None.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...]
    grade: Callable[[Question, str, TraceOf], Grade]
    widget: str
    label: str = "Your answer"
    placeholder: str = ""
    graded: bool = True
    shape: Callable[[ShapeCheck, dict, Path_], None] | None = None
    on_model: Callable[[ModelCheck, Question, Path_], None] | None = None
    sentence: Callable[[Question], str | None] = lambda question: None


def _graded_by(name: str) -> Callable[[Question, str, TraceOf], Grade]:
    """``graders.<name>``, imported by the first answer graded: reading or validating a lesson's
    shape (``class create``) imports no PyTorch, which grading needs."""

    def grade(question: Question, answer: str, traces: TraceOf) -> Grade:
        from viz_transformer.course import graders

        return getattr(graders, name)(question, answer, traces)

    grade.__name__ = name
    return grade


def _number_shape(shape: ShapeCheck, args: dict, path: Path_) -> None:
    if not isinstance(args.get("args"), dict):
        shape.add((*path, "args"), "a number check's 'args' must be a mapping")
        return
    quantity = args.get("quantity")
    if quantity not in NUMBER_FIELDS:
        shape.add(
            (*path, "quantity"),
            f"unknown quantity {quantity!r}; quantities: {', '.join(NUMBER_FIELDS)}",
        )
        return
    fields = dict.fromkeys(NUMBER_FIELDS[quantity], True)
    shape.keys(args["args"], (*path, "args"), fields, f"the {quantity} args")
    shape.fields(args["args"], (*path, "args"))
    for key, message in arg_problems(quantity, args["args"]):
        shape.add((*path, "args", key), message)


def _number_on_model(model: ModelCheck, question: Question, path: Path_) -> None:
    quantity, args = question.args["quantity"], question.args["args"]
    if quantity in COURSE_QUANTITIES:
        model.course(quantity, args, (*path, "args"))
    elif quantity != "pe_value":  # the formula's value needs no model
        model.attention(args, (*path, "args"))


def _number_sentence(question: Question) -> str | None:
    return question.args["args"].get("sentence")


QUESTION_KINDS: dict[str, KindRule] = {
    "head": KindRule(
        required=("attention", "sentence", "query", "key"),
        optional=("layers",),
        grade=_graded_by("grade_head"),
        widget="head_answer",
        label="Head (layer and head, from 0)",
        placeholder="L1 H3",
        on_model=lambda model, q, path: model.attention(q.args, path),
        sentence=lambda q: q.args["sentence"],
    ),
    "token": KindRule(
        required=("sentence", "step"),
        optional=(),
        grade=_graded_by("grade_token"),
        widget="typed_answer",
        label="Token",
        placeholder="a token, as the page shows it",
        on_model=lambda model, q, path: model.decoder_step(q.args, path),
        sentence=lambda q: q.args["sentence"],
    ),
    "number": KindRule(
        required=("quantity", "args"),
        optional=("tolerance",),
        grade=_graded_by("grade_number"),
        widget="typed_answer",
        label="Number",
        placeholder="0.62",
        shape=_number_shape,
        on_model=_number_on_model,
        sentence=_number_sentence,
    ),
    "choice": KindRule(
        required=("options", "correct"),
        optional=(),
        grade=_graded_by("grade_choice"),
        widget="choice_answer",
    ),
    "text": KindRule(
        required=(), optional=(), grade=_graded_by("keep_text"), widget="free_answer", graded=False
    ),
}


def rule(question: Question) -> KindRule:
    """The table's row for ``question``'s kind."""
    return QUESTION_KINDS[question.kind]
