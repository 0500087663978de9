"""What a lesson asks of its model, validated on the model: every layer, head and token index it
names exists, every attention kind it asks about is one the model shows, and the model reads
every sentence (``vt.validate_lesson``, ``lesson validate``). What each question kind asks is its
row's ``on_model`` in ``question_kinds.QUESTION_KINDS``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from viz_transformer.course.files import lessons, load_lesson
from viz_transformer.course.grading import traced
from viz_transformer.course.lesson import Lesson
from viz_transformer.course.located import Path_, line_of, load_located
from viz_transformer.course.quantities import course_value
from viz_transformer.course.question_kinds import rule
from viz_transformer.course.shape import LessonError
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.trace import Trace

# the URL keys that name an attention kind, a layer and a head (ui/state.py URL_KEYS)
VIEW_HEADS = (("kind", "layer", "head"), ("heads_kind", "heads_layer", "heads_head"))


def validate_lesson(name_or_path: str | Path) -> list[str]:
    """Every problem of a lesson file, ``FILE:LINE: what is wrong`` each (empty: it is fine).

    First its shape (as ``vt.load_lesson``), then a prerequisite that is no lesson here, then,
    on its model: a layer, head or token index the model does not have, an attention kind it
    does not show, a sentence it cannot read.

    Raises:
        ValueError: an unknown lesson name or a missing file.
    """
    try:
        lesson = load_lesson(name_or_path)
    except LessonError as exc:
        return exc.problems
    found = _prerequisites(lesson)
    try:
        model = load_model(lesson.model)
    except (ValueError, RuntimeError) as exc:
        return [*found, f"{_where(lesson, ('model',))}: {exc}"]
    return found + _ModelValidation(lesson, model).problems()


def _prerequisites(lesson: Lesson) -> list[str]:
    """A prerequisite that is no lesson here (``vt.lessons()``), or the lesson itself."""
    known = set(lessons()) - {lesson.name}
    return [
        f"{_where(lesson, ('prerequisites', i))}: prerequisite {name!r} is not another "
        f"lesson here; lessons: {', '.join(sorted(known)) or 'none'}"
        for i, name in enumerate(lesson.prerequisites)
        if name not in known
    ]


def _where(lesson: Lesson, path: Path_) -> str:
    """``FILE:LINE`` of the value at ``path`` in the lesson's file."""
    filename = str(lesson.path) if lesson.path else lesson.name
    return f"{filename}:{line_of(load_located(lesson.source)[1], path)}"


class _ModelValidation:
    """One lesson validated on its model (``checks.ModelCheck``: what a kind's row calls)."""

    def __init__(self, lesson: Lesson, model: LoadedModel) -> None:
        self.lesson, self.model, self.found = lesson, model, []
        self.filename = str(lesson.path) if lesson.path else lesson.name
        self.lines = load_located(lesson.source)[1]
        self.traces: dict[str, Trace | None] = {}  # sentence -> its trace, None: unreadable

    def add(self, path: Path_, message: str) -> None:
        self.found.append(f"{self.filename}:{line_of(self.lines, path)}: {message}")

    def problems(self) -> list[str]:
        for i, step in enumerate(self.lesson.steps):
            self.view(step.view, ("steps", i, "view"))
            on_model = rule(step.question).on_model if step.question is not None else None
            if step.question is not None and on_model is not None:
                on_model(self, step.question, ("steps", i, "check"))
        return self.found

    def trace(self, sentence: str, path: Path_) -> Trace | None:
        """The sentence's trace (once per validation), or None once its problem is reported."""
        model = self.model
        if sentence not in self.traces:
            try:
                model.source_ids(sentence)
                self.traces[sentence] = traced(model.name, sentence)
            except (ValueError, NotImplementedError) as exc:
                self.traces[sentence] = None
                self.add((*path, "sentence"), f"{model.name} cannot read {sentence!r}: {exc}")
        return self.traces[sentence]

    def index(self, args: Mapping[str, Any], key: str, upper: int, path: Path_, what: str) -> None:
        if key in args and args[key] >= upper:
            self.add(
                (*path, key),
                f"{key} {args[key]} does not exist: {what} has {upper} (counted from 0)",
            )

    def kind(self, kind: Any, path: Path_) -> bool:
        model = self.model
        if kind in model.facts.kinds:
            return True
        self.add(
            path,
            f"{model.name} shows no {kind!r} attention; it shows {', '.join(model.facts.kinds)}",
        )
        return False

    def view(self, view: Mapping[str, Any], path: Path_) -> None:
        if isinstance(view.get("sentence"), str):
            tr = self.trace(view["sentence"], path)
            if tr is not None:
                self.view_tokens(view, tr, path)
        facts = self.model.facts
        for kind_key, layer_key, head_key in VIEW_HEADS:
            kind = view.get(kind_key)
            if kind is not None and not self.kind(kind, (*path, kind_key)):
                continue
            kinds = [kind] if kind is not None else list(facts.kinds)
            layers = max(facts.layers[k] for k in kinds)
            heads = max(facts.heads[k] for k in kinds)
            for key, upper, what in ((layer_key, layers, "layers"), (head_key, heads, "heads")):
                if type(view.get(key)) is int:
                    self.index(view, key, upper, path, f"the model's {what} ({kinds[0]})")

    def view_tokens(self, view: Mapping[str, Any], tr: Trace, path: Path_) -> None:
        """A view's token indices on its sentence: the walkthrough's query ``token`` and the why
        section's ``why_query`` and ``why_key`` (of the view's ``kind``), the decoder's
        ``step`` of a translator (a decoder-only model's steps continue its prompt); a page
        would quietly show another token than the step names."""
        kind = view.get("kind") if view.get("kind") in self.model.facts.kinds else None
        rows, cols = tr.tokens_for(kind or self.model.facts.kinds[0])
        steps = tr.tgt_tokens if tr.src_tokens else ()
        for key, tokens, what in (
            ("token", rows, "the query tokens"),
            ("why_query", rows, "the query tokens"),
            ("why_key", cols, "the key tokens"),
            ("step", steps, "the decoder's input"),
        ):
            if type(view.get(key)) is int and (tokens or key != "step"):
                self.index(view, key, len(tokens), path, f"{what} {list(tokens)}")

    def course(self, quantity: str, args: Mapping[str, Any], path: Path_) -> None:
        """A course quantity (``quantities``): its sentence and indices as any check's, then
        its value computed once, so an index, role or part the model lacks is reported here."""
        before = len(self.found)
        if "attention" in args:
            self.attention(args, path)
        elif "sentence" in args:
            self.trace(args["sentence"], path)
        if len(self.found) > before:
            return
        try:
            course_value(self.model.name, quantity, args)
        except (ValueError, IndexError) as exc:
            self.add(path, f"{quantity} cannot be computed on {self.model.name}: {exc}")

    def decoder_step(self, args: Mapping[str, Any], path: Path_) -> None:
        tr = self.trace(args["sentence"], path)
        if tr is not None:
            self.index(args, "step", len(tr.tgt_tokens), path, "the decoder's input")

    def attention(self, args: Mapping[str, Any], path: Path_) -> None:
        tr = self.trace(args["sentence"], path)
        attention = args["attention"]
        if tr is None or not self.kind(attention, (*path, "attention")):
            return
        patterns = tr.get(attention)
        if patterns is None:  # shown by the model, but not recorded for this sentence
            why = tr.notes.get(attention, "no reason given")
            self.add(
                (*path, "attention"),
                f"{tr.model_name} records no {attention} attention "
                f"for {args['sentence']!r} ({why})",
            )
            return
        n_layers, n_heads, n_q, n_k = patterns.shape
        rows, cols = tr.map_labels(attention)
        self.index(args, "layer", n_layers, path, f"{attention} attention's layers")
        self.index(args, "head", n_heads, path, f"{attention} attention's heads")
        self.index(args, "query", n_q, path, f"the rows {list(rows)}")
        self.index(args, "key", n_k, path, f"the columns {list(cols)}")
        for j, layer in enumerate(args.get("layers") or ()):
            if layer >= n_layers:
                self.add(
                    (*path, "layers", j),
                    f"layer {layer} does not exist: {attention} "
                    f"attention has {n_layers} layers (counted from 0)",
                )
