"""A lesson file's text read into a ``Lesson`` with its shape validated against the lesson format:
every field known, required ones there, of the right type and range, pages and view keys the app
has, each question's fields as ``question_kinds.QUESTION_KINDS`` gives them. Every problem names
``FILE:LINE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from viz_transformer import settings
from viz_transformer.course.lesson import Lesson, Question, Step
from viz_transformer.course.located import LocatedError, Path_, line_of, load_located
from viz_transformer.course.question_kinds import QUESTION_KINDS
from viz_transformer.models.registry import model_info
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.view_keys import MODEL_KEY, URL_KEYS

TOP_KEYS = {"title": True, "model": True, "steps": True, "description": False}  # key: required
COURSE_KEYS = ("order", "topic", "minutes", "goals", "prerequisites")  # a lesson in a course
TOP_KEYS |= dict.fromkeys(COURSE_KEYS, False)
MAX_MINUTES = 600
STEP_KEYS = {"title": True, "text": False, "page": False, "view": False, "check": False}
# a step's view: the app's URL keys, but the model (the lesson's) and the way back (the link's)
VIEW_KEYS = set(URL_KEYS) - {MODEL_KEY, "lesson_back"}
INDEX_FIELDS = ("query", "key", "layer", "head", "step", "position", "dim", "correct")
TEXT_FIELDS = ("sentence", "attention", "quantity", "question")


class LessonError(ValueError):
    """A lesson file with problems; ``problems`` holds one ``FILE:LINE: what is wrong`` each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def page_names() -> set[str] | None:
    """The app's page names (``pages/*.py`` stems), or None where the app is not installed."""
    if not settings.PAGES_DIR.is_dir():
        return None
    return {p.stem for p in settings.PAGES_DIR.glob("*.py") if not p.stem.startswith("_")}


def read_lesson(
    text: str, name: str, filename: str = "<lesson>", path: Path | None = None
) -> Lesson:
    """A ``Lesson`` from a file's text (a class keeps the text, so any replica can read it).

    Args:
        text: the YAML text.
        name: the lesson's name (the file's stem).
        filename: what problems are prefixed with.
        path: the file, when read from one.

    Raises:
        LessonError: every problem found, ``FILE:LINE: what is wrong`` each.
    """
    try:
        data, lines = load_located(text)
    except LocatedError as exc:
        raise LessonError([f"{filename}:{exc.line}: {exc.message}"]) from None
    shape = _Shape(filename, lines)
    lesson = shape.lesson(data, name, text, path)
    if shape.problems or lesson is None:
        raise LessonError(shape.problems or [f"{filename}:1: not a lesson"])
    return lesson


class _Shape:
    """Validates the data of one file against the lesson format, collecting located problems
    (``checks.ShapeCheck``: what a kind's own shape check calls)."""

    def __init__(self, filename: str, lines: dict[Path_, int]) -> None:
        self.filename, self.lines, self.problems = filename, lines, []
        self.pages = page_names()
        self.model_kinds: tuple[str, ...] | None = None  # the lesson model's kinds, once known

    def line(self, path: Path_) -> int:
        return line_of(self.lines, path)

    def add(self, path: Path_, message: str) -> None:
        self.problems.append(f"{self.filename}:{self.line(path)}: {message}")

    def keys(self, data: Any, path: Path_, known: Mapping[str, bool], what: str) -> bool:
        if not isinstance(data, dict):
            self.add(path, f"{what} must be a mapping of fields ({', '.join(known)})")
            return False
        for key in data:
            if key not in known:
                self.add(
                    (*path, key), f"unknown field {key!r} in {what}; it has {', '.join(known)}"
                )
        for key, required in known.items():
            if required and key not in data:
                self.add(path, f"{what} lacks {key!r}")
        return True

    def text(self, data: dict, key: str, path: Path_, what: str) -> str | None:
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            self.add((*path, key), f"{what}'s {key!r} must be non-empty text")
            return None
        return value

    def lesson(self, data: Any, name: str, source: str, path: Path | None) -> Lesson | None:
        if not self.keys(data, (), TOP_KEYS, "a lesson"):
            return None
        title = self.text(data, "title", (), "the lesson")
        model = self.text(data, "model", (), "the lesson")
        if model is not None:
            try:
                self.model_kinds = model_info(model).kinds  # from its spec: nothing loads
            except ValueError as exc:
                self.add(("model",), str(exc))
        steps = data.get("steps")
        if not isinstance(steps, list) or not steps:
            self.add(("steps",), "'steps' must be a list of at least one step")
            steps = []
        built = [self.step(s, ("steps", i), model or "") for i, s in enumerate(steps)]
        course = self.course(data)
        if self.problems or title is None or model is None:
            return None
        return Lesson(name, title, model, tuple(s for s in built if s), source, path, **course)

    def course(self, data: dict) -> dict[str, Any]:
        """The course fields (``COURSE_KEYS``), each of its type: a whole order from 1, minutes
        from 1 to ``MAX_MINUTES``, a topic, goals and prerequisites as texts."""
        found: dict[str, Any] = {}
        for key in ("order", "minutes"):
            value, top = data.get(key), MAX_MINUTES if key == "minutes" else None
            if value is not None and (type(value) is not int or value < 1 or (top and value > top)):
                upto = f" to {top}" if top else ""
                self.add((key,), f"{key!r} must be a whole number from 1{upto} (got {value!r})")
            elif value is not None:
                found[key] = value
        topic = self.text(data, "topic", (), "the lesson")
        if topic is not None:
            found["topic"] = topic
        for key in ("goals", "prerequisites"):
            value = data.get(key, [])
            listed = isinstance(value, list)
            bad = [
                i
                for i, v in enumerate(value if listed else [])
                if not str(v).strip() or not isinstance(v, str)
            ]
            if not listed or bad:
                at = (key, bad[0]) if bad else (key,)
                self.add(at, f"{key!r} must be a list of non-empty texts")
            else:
                found[key] = tuple(value)
        return found

    def step(self, data: Any, path: Path_, model: str) -> Step | None:
        what = f"step {path[-1]}"
        if not self.keys(data, path, STEP_KEYS, what):
            return None
        title = self.text(data, "title", path, what)
        body = self.text(data, "text", path, what) or ""
        page = self.text(data, "page", path, what)
        if page is not None and self.pages is not None and page not in self.pages:
            self.add(
                (*path, "page"), f"unknown page {page!r}; pages: {', '.join(sorted(self.pages))}"
            )
        view = data.get("view", {})
        if not isinstance(view, dict) or any(
            isinstance(v, (dict, list)) or v is None for v in view.values()
        ):
            self.add((*path, "view"), "'view' must map URL keys to single values")
            view = {}
        elif view and page is None:
            self.add((*path, "view"), "a 'view' needs the 'page' it applies to")
        self.view_keys(view, (*path, "view"))
        question = (
            self.question(data["check"], (*path, "check"), model) if "check" in data else None
        )
        if title is None:
            return None
        return Step(title, body, page, MappingProxyType(dict(view)), question)

    def view_keys(self, view: dict, path: Path_) -> None:
        """Each key one the app reads from its URL, with a value it can read."""
        for key, value in view.items():
            if key not in VIEW_KEYS:
                self.add(
                    (*path, key),
                    f"unknown view key {key!r}; the app's URL keys: {', '.join(sorted(VIEW_KEYS))}",
                )
                continue
            try:
                URL_KEYS[key](str(value))
            except ValueError:
                self.add((*path, key), f"view key {key!r} cannot be {value!r}")

    def question(self, data: Any, path: Path_, model: str) -> Question | None:
        """A step's ``check:`` mapping read into a ``Question`` (its kind's fields)."""
        if not isinstance(data, dict) or data.get("kind") not in QUESTION_KINDS:
            kind = data.get("kind") if isinstance(data, dict) else None
            self.add(
                (*path, "kind"), f"unknown check kind {kind!r}; kinds: {', '.join(QUESTION_KINDS)}"
            )
            return None
        rule = QUESTION_KINDS[data["kind"]]
        known = {"kind": True, "question": False} | dict.fromkeys(rule.required, True)
        self.keys(
            data, path, known | dict.fromkeys(rule.optional, False), f"a {data['kind']} check"
        )
        args = {k: v for k, v in data.items() if k not in ("kind", "question")}
        self.fields(args, path)
        if rule.shape is not None:
            rule.shape(self, args, path)
        where = f"{self.filename}:{self.line(path)}"
        prompt = self.text(data, "question", path, "the check")
        return Question(data["kind"], MappingProxyType(args), model, prompt, where)

    def fields(self, args: dict, path: Path_) -> None:
        """Types and ranges of the fields that need no model."""
        for key, value in args.items():
            at = (*path, key)
            if key in INDEX_FIELDS and (type(value) is not int or value < 0):
                self.add(at, f"{key!r} must be a whole number from 0 (got {value!r})")
            elif key in TEXT_FIELDS and (not isinstance(value, str) or not value.strip()):
                self.add(at, f"{key!r} must be non-empty text")
        if "attention" in args and args["attention"] not in KINDS:
            self.add((*path, "attention"), f"'attention' must be one of {', '.join(KINDS)}")
        elif self.model_kinds and args.get("attention") not in (None, *self.model_kinds):
            self.add(
                (*path, "attention"),
                f"the lesson's model shows no {args['attention']!r} "
                f"attention; it shows {', '.join(self.model_kinds)}",
            )
        layers = args.get("layers", [])
        if not isinstance(layers, list) or not all(type(v) is int and v >= 0 for v in layers):
            self.add((*path, "layers"), "'layers' must be a list of layer numbers from 0")
        if "d_model" in args and (
            type(args["d_model"]) is not int or args["d_model"] < 2 or args["d_model"] % 2
        ):
            self.add((*path, "d_model"), "'d_model' must be an even whole number >= 2")
        elif "dim" in args and type(args["dim"]) is int and args["dim"] >= args.get("d_model", 1e9):
            self.add((*path, "dim"), f"'dim' must be below d_model ({args['d_model']})")
        tolerance = args.get("tolerance", 0.02)
        if type(tolerance) not in (int, float) or not 0 < tolerance < 1:
            self.add((*path, "tolerance"), "'tolerance' must be a fraction between 0 and 1")
        if "options" in args:
            self.options(args, path)

    def options(self, args: dict, path: Path_) -> None:
        options = args["options"]
        if not isinstance(options, list) or len(options) < 2:
            self.add((*path, "options"), "'options' must be a list of at least two answers")
        elif any(isinstance(o, bool) or o is None for o in options):
            self.add(
                (*path, "options"),
                "YAML reads yes, no, true, false and null as values, "
                "not text: put such an option in quotes",
            )
        elif not all(isinstance(o, (str, int, float)) and str(o).strip() for o in options):
            self.add((*path, "options"), "each option must be a non-empty text or number")
        elif type(args.get("correct")) is int and args["correct"] >= len(options):
            self.add(
                (*path, "correct"),
                f"'correct' is {args['correct']} but there are "
                f"{len(options)} options (counted from 0)",
            )
