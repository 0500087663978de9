"""What a lesson asks of its model, validated on the model: every layer, head and token index it
names exists, and the model reads every sentence (``vt.validate_lesson``, ``lesson validate``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from viz_transformer.analysis.lessons.files import LessonError, load_lesson
from viz_transformer.analysis.lessons.grading import lesson_trace
from viz_transformer.analysis.lessons.located import Path_, line_of, load_located
from viz_transformer.analysis.lessons.quantities import COURSE_QUANTITIES, course_value
from viz_transformer.analysis.lessons.records import Lesson
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.trace import Trace

# the URL keys that name an attention kind, a layer and a head (ui/state.py URL_KEYS)
VIEW_HEADS = (("kind", "layer", "head"), ("heads_kind", "heads_layer", "heads_head"))


def validate_lesson(name_or_path: str | Path) -> list[str]:
    """Every problem of a lesson file, ``FILE:LINE: what is wrong`` each (empty: it is fine).

    First its shape (as ``vt.load_lesson``), then, on its model: a layer, head or token index
    the model does not have, an attention kind it does not show, a sentence it cannot read.

    Raises:
        ValueError: an unknown lesson name or a missing file.
    """
    try:
        lesson = load_lesson(name_or_path)
    except LessonError as exc:
        return exc.problems
    return _ModelValidation(lesson).problems()


class _ModelValidation:
    def __init__(self, lesson: Lesson) -> None:
        self.lesson, self.found = lesson, []
        self.filename = str(lesson.path) if lesson.path else lesson.name
        self.lines = load_located(lesson.source)[1]

    def add(self, path: Path_, message: str) -> None:
        self.found.append(f"{self.filename}:{line_of(self.lines, path)}: {message}")

    def problems(self) -> list[str]:
        try:
            model = load_model(self.lesson.model)
        except (ValueError, RuntimeError) as exc:
            self.add(("model",), str(exc))
            return self.found
        for i, step in enumerate(self.lesson.steps):
            at = ("steps", i)
            self.view(model, step.view, (*at, "view"))
            if step.check is not None and step.check.kind in ("head", "token"):
                self.attention(model, step.check.args, (*at, "check"), step.check.kind)
            elif step.check is not None and step.check.kind == "number":
                args, quantity = step.check.args["args"], step.check.args["quantity"]
                if quantity in COURSE_QUANTITIES:
                    self.course(model, quantity, args, (*at, "check", "args"))
                elif quantity != "pe_value":
                    self.attention(model, args, (*at, "check", "args"), "number")
        return self.found

    def course(
        self, model: LoadedModel, quantity: str, args: Mapping[str, Any], path: Path_
    ) -> None:
        """A course quantity (``quantities``): its sentence and indices as any check's, then
        its value computed once, so an index, role or part the model lacks is reported here."""
        before = len(self.found)
        if "attention" in args:
            self.attention(model, args, path, "number")
        elif "sentence" in args:
            self.trace(model, args["sentence"], path)
        if len(self.found) > before:
            return
        try:
            course_value(model.name, quantity, args)
        except (ValueError, IndexError) as exc:
            self.add(path, f"{quantity} cannot be computed on {model.name}: {exc}")

    def trace(self, model: LoadedModel, sentence: str, path: Path_) -> Trace | None:
        try:
            model.source_ids(sentence)
            return lesson_trace(model.name, sentence)
        except (ValueError, NotImplementedError) as exc:
            self.add((*path, "sentence"), f"{model.name} cannot read {sentence!r}: {exc}")
            return None

    def index(self, args: Mapping[str, Any], key: str, upper: int, path: Path_, what: str) -> None:
        if key in args and args[key] >= upper:
            self.add((*path, key), f"{key} {args[key]} does not exist: {what} has {upper} "
                     f"(counted from 0)")  # fmt: skip

    def kind(self, model: LoadedModel, kind: Any, path: Path_) -> bool:
        if kind in model.facts.kinds:
            return True
        self.add(path, f"{model.name} shows no {kind!r} attention; it shows "
                 f"{', '.join(model.facts.kinds)}")  # fmt: skip
        return False

    def view(self, model: LoadedModel, view: Mapping[str, Any], path: Path_) -> None:
        if isinstance(view.get("sentence"), str):
            self.trace(model, view["sentence"], path)
        for kind_key, layer_key, head_key in VIEW_HEADS:
            kind = view.get(kind_key)
            if kind is not None and not self.kind(model, kind, (*path, kind_key)):
                continue
            facts = model.facts
            kinds = [kind] if kind is not None else list(facts.kinds)
            layers = max(facts.layers[k] for k in kinds)
            heads = max(facts.heads[k] for k in kinds)
            for key, upper, what in ((layer_key, layers, "layers"), (head_key, heads, "heads")):
                if type(view.get(key)) is int:
                    self.index(view, key, upper, path, f"the model's {what} ({kinds[0]})")

    def attention(
        self, model: LoadedModel, args: Mapping[str, Any], path: Path_, kind: str
    ) -> None:
        tr = self.trace(model, args["sentence"], path)
        if tr is None:
            return
        if kind == "token":
            self.index(args, "step", len(tr.tgt_tokens), path, "the decoder's input")
            return
        attention = args["attention"]
        if not self.kind(model, attention, (*path, "attention")) or tr.get(attention) is None:
            return
        n_layers, n_heads, n_q, n_k = tr.get(attention).shape
        rows, cols = tr.tokens_for(attention)
        self.index(args, "layer", n_layers, path, f"{attention} attention's layers")
        self.index(args, "head", n_heads, path, f"{attention} attention's heads")
        self.index(args, "query", n_q, path, f"the rows {list(rows)}")
        self.index(args, "key", n_k, path, f"the columns {list(cols)}")
        for j, layer in enumerate(args.get("layers") or ()):
            if layer >= n_layers:
                self.add((*path, "layers", j), f"layer {layer} does not exist: {attention} "
                         f"attention has {n_layers} layers (counted from 0)")  # fmt: skip
