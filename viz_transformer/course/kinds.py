"""The check kinds of a lesson in one table (``CHECK_TABLE``): for each kind, the fields a lesson
file gives it, what validating it checks (its shape in the file, then on the model), how an answer
is graded, and the name of the answer widget that takes it (``ui/lesson_checks.py`` draws the
widget of that name). A new kind is a row here and, where no widget fits, a widget there.

The shape and model checks are written against two small interfaces (``ShapeCheck``,
``ModelCheck``) that ``shape.py`` and ``validation.py`` implement: a row says what to check, those
modules say how a problem is located and worded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from viz_transformer.course import graders
from viz_transformer.course.graders import TraceOf
from viz_transformer.course.located import Path_
from viz_transformer.course.quantities import COURSE_QUANTITIES, arg_problems
from viz_transformer.course.records import Check, CheckKind, Grade

# the answer widgets of ui/lesson_checks.py (ANSWER_WIDGETS, by kind), by function name
Widget = Literal["head_answer", "typed_answer", "choice_answer", "free_answer"]
NUMBER_FIELDS: dict[str, tuple[str, ...]] = {  # a number check's quantity -> its args
    "attention_weight": ("sentence", "attention", "layer", "head", "query", "key"),
    "row_entropy": ("sentence", "attention", "layer", "head", "query"),
    "pe_value": ("position", "dim", "d_model"),
} | {name: q.fields for name, q in COURSE_QUANTITIES.items()}


class ShapeCheck(Protocol):
    """What a kind's shape check may call (``shape._Shape``): problems located in the file."""

    def add(self, path: Path_, message: str) -> None:
        """Report ``message`` at the line of ``path``."""

    def keys(self, data: Any, path: Path_, known: Mapping[str, bool], what: str) -> bool:
        """Report unknown and missing fields of ``data`` (``known``: field -> required)."""

    def fields(self, args: dict, path: Path_) -> None:
        """Report fields of a wrong type or range (indices, texts, layers, tolerance, options)."""


class ModelCheck(Protocol):
    """What a kind's model check may call (``validation._ModelValidation``)."""

    def attention(self, args: Mapping[str, Any], path: Path_) -> None:
        """Report an unreadable ``sentence``, an ``attention`` kind the model does not record,
        and a ``layer``, ``head``, ``query``, ``key`` or ``layers`` entry it does not have."""

    def decoder_step(self, args: Mapping[str, Any], path: Path_) -> None:
        """Report an unreadable ``sentence`` and a ``step`` beyond the decoder's input."""

    def course(self, quantity: str, args: Mapping[str, Any], path: Path_) -> None:
        """Report what keeps a course quantity (``quantities``) from a value on the model."""


@dataclass(frozen=True)
class KindRule:
    """How one check kind is read, validated, graded and answered.

    Attributes:
        required: its fields besides ``kind`` and ``question``, required in the file.
        optional: its optional fields.
        grade: ``(check, answer, traces) -> Grade`` for an answer stripped and not empty.
        widget: the answer widget ``ui/lesson_checks.py`` draws for it (its function's name).
        label: the answer box's label, where the widget has a box to type in.
        placeholder: the example shown in an empty box.
        graded: False for a kind whose answers are kept, not graded (``correct`` None).
        shape: further checks of its fields in the file (beyond ``ShapeCheck.fields``), or None.
        on_model: what validating it checks on the model, or None (nothing to check there).
        sentence: the sentence an answer is graded on (traced ahead by ``warm_traces``), or None.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...]
    grade: Callable[[Check, str, TraceOf], Grade]
    widget: Widget
    label: str = "Your answer"
    placeholder: str = ""
    graded: bool = True
    shape: Callable[[ShapeCheck, dict, Path_], None] | None = None
    on_model: Callable[[ModelCheck, Check, Path_], None] | None = None
    sentence: Callable[[Check], str | None] = lambda check: None


def _number_shape(shape: ShapeCheck, args: dict, path: Path_) -> None:
    if not isinstance(args.get("args"), dict):
        shape.add((*path, "args"), "a number check's 'args' must be a mapping")
        return
    quantity = args.get("quantity")
    if quantity not in NUMBER_FIELDS:
        shape.add((*path, "quantity"), f"unknown quantity {quantity!r}; quantities: "
                  f"{', '.join(NUMBER_FIELDS)}")  # fmt: skip
        return
    fields = dict.fromkeys(NUMBER_FIELDS[quantity], True)
    shape.keys(args["args"], (*path, "args"), fields, f"the {quantity} args")
    shape.fields(args["args"], (*path, "args"))
    for key, message in arg_problems(quantity, args["args"]):
        shape.add((*path, "args", key), message)


def _number_on_model(model: ModelCheck, check: Check, path: Path_) -> None:
    quantity, args = check.args["quantity"], check.args["args"]
    if quantity in COURSE_QUANTITIES:
        model.course(quantity, args, (*path, "args"))
    elif quantity != "pe_value":  # the formula's value needs no model
        model.attention(args, (*path, "args"))


def _number_sentence(check: Check) -> str | None:
    return check.args["args"].get("sentence")


# records.CHECK_KINDS lists these keys in this order (tests/unit/test_lesson_kinds.py)
CHECK_TABLE: dict[CheckKind, KindRule] = {
    "head": KindRule(
        required=("attention", "sentence", "query", "key"),
        optional=("layers",),
        grade=graders.grade_head,
        widget="head_answer",
        label="Head (layer and head, from 0)",
        placeholder="L1 H3",
        on_model=lambda model, check, path: model.attention(check.args, path),
        sentence=lambda check: check.args["sentence"],
    ),
    "token": KindRule(
        required=("sentence", "step"),
        optional=(),
        grade=graders.grade_token,
        widget="typed_answer",
        label="Token",
        placeholder="a token, as the page shows it",
        on_model=lambda model, check, path: model.decoder_step(check.args, path),
        sentence=lambda check: check.args["sentence"],
    ),
    "number": KindRule(
        required=("quantity", "args"),
        optional=("tolerance",),
        grade=graders.grade_number,
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
        grade=graders.grade_choice,
        widget="choice_answer",
    ),
    "text": KindRule(
        required=(), optional=(), grade=graders.keep_text, widget="free_answer", graded=False
    ),
}


def rule(check: Check) -> KindRule:
    """The table's row for ``check``'s kind."""
    return CHECK_TABLE[check.kind]
