"""Lesson files: where they are (built in, or a teacher's ``VT_LESSON_DIR``) and reading one
into a ``Lesson`` with its shape validated: every problem names ``FILE:LINE``.

What needs the model itself (a layer it lacks, a sentence it cannot read) is validated by
``validate_lesson`` in ``viz_transformer.analysis.lessons.validation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from viz_transformer import settings
from viz_transformer.analysis.lessons.located import LocatedError, Path_, line_of, load_located
from viz_transformer.analysis.lessons.quantities import COURSE_QUANTITIES, arg_problems
from viz_transformer.analysis.lessons.records import (
    CHECK_KINDS,
    Check,
    Lesson,
    Step,
)
from viz_transformer.models.registry import model_info
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.view_keys import MODEL_KEY, URL_KEYS

SUFFIXES = (".yaml", ".yml")
TOP_KEYS = {"title": True, "model": True, "steps": True, "description": False}  # key: required
TOP_KEYS |= dict.fromkeys(("order", "topic", "minutes", "goals", "prerequisites"), False)
STEP_KEYS = {"title": True, "text": False, "page": False, "view": False, "check": False}
# each check kind's (required, optional) fields besides ``kind`` and ``question``
CHECK_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "head": (("attention", "sentence", "query", "key"), ("layers",)),
    "token": (("sentence", "step"), ()),
    "number": (("quantity", "args"), ("tolerance",)),
    "choice": (("options", "correct"), ()),
    "text": ((), ()),
}
NUMBER_FIELDS: dict[str, tuple[str, ...]] = {  # a number check's quantity -> its args
    "attention_weight": ("sentence", "attention", "layer", "head", "query", "key"),
    "row_entropy": ("sentence", "attention", "layer", "head", "query"),
    "pe_value": ("position", "dim", "d_model"),
} | {name: q.fields for name, q in COURSE_QUANTITIES.items()}
# a step's view: the app's URL keys, but the model (the lesson's) and the way back (the link's)
VIEW_KEYS = set(URL_KEYS) - {MODEL_KEY, "lesson_back"}
INDEX_FIELDS = ("query", "key", "layer", "head", "step", "position", "dim", "correct")
TEXT_FIELDS = ("sentence", "attention", "quantity", "question")


class LessonError(ValueError):
    """A lesson file with problems; ``problems`` holds one ``FILE:LINE: what is wrong`` each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def lesson_dirs() -> list[Path]:
    """The folders lessons are found in: the teacher's ``VT_LESSON_DIR`` first (its files win
    over a built-in one of the same name), then the built-in lessons."""
    own = settings.lesson_dir()
    return [d for d in (own, settings.CURRICULUM_DIR) if d is not None and d.is_dir()]


def _files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in reversed(lesson_dirs()):  # the teacher's folder last: it replaces
        found |= {p.stem: p for p in sorted(folder.iterdir()) if p.suffix in SUFFIXES}
    return found


def lessons() -> list[str]:
    """Names of the lessons offered here (file stems, sorted): ``vt.load_lesson(name)``."""
    return sorted(_files())


def page_names() -> set[str] | None:
    """The app's page names (``pages/*.py`` stems), or None where the app is not installed."""
    if not settings.PAGES_DIR.is_dir():
        return None
    return {p.stem for p in settings.PAGES_DIR.glob("*.py") if not p.stem.startswith("_")}


def find_lesson(name_or_path: str | Path, paths: bool = True) -> Path:
    """The file of a lesson named ``name_or_path`` (see ``lessons()``), or, when ``paths``, that
    path itself when it names a ``.yaml`` file or contains a folder.

    Raises:
        ValueError: no such lesson or file (with ``paths=False``, anything but a listed name).
    """
    text = str(name_or_path)
    is_path = isinstance(name_or_path, Path) or text.endswith(SUFFIXES) or "/" in text
    if paths and (is_path or "\\" in text):
        path = Path(text).expanduser()
        if not path.is_file():
            raise ValueError(f"{text}: no such lesson file.")
        return path
    files = _files()
    if text not in files:
        known = ", ".join(sorted(files)) or "none"
        raise ValueError(f"unknown lesson {text!r}; lessons here: {known}.")
    return files[text]


def load_lesson(name_or_path: str | Path, paths: bool = True) -> Lesson:
    """Read a lesson by name (``vt.lessons()``) or path and check its shape.

    Args:
        name_or_path: a name from ``vt.lessons()``, or a path to a ``.yaml`` file.
        paths: False for a name that came from a user (a page's ``?lesson=``): then only the
            names ``vt.lessons()`` lists are read, never a file elsewhere on the server.

    Raises:
        ValueError: an unknown name or missing file; bad YAML, a missing or unknown field, an
            unknown page, check kind, quantity or model (a ``LessonError`` whose lines each
            read ``FILE:LINE: what is wrong``).
    """
    path = find_lesson(name_or_path, paths)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LessonError([f"{path}:0: cannot be read as UTF-8 text ({exc})"]) from None
    return read_lesson(text, path.stem, str(path), path)


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
    if shape.problems:
        raise LessonError(shape.problems)
    assert lesson is not None
    return lesson


class _Shape:
    """Checks the data of one file against the lesson format, collecting located problems."""

    def __init__(self, filename: str, lines: dict[Path_, int]) -> None:
        self.filename, self.lines, self.problems = filename, lines, []
        self.pages = page_names()

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
                model_info(model)
            except ValueError as exc:
                self.add(("model",), str(exc))
        steps = data.get("steps")
        if not isinstance(steps, list) or not steps:
            self.add(("steps",), "'steps' must be a list of at least one step")
            steps = []
        built = [self.step(s, ("steps", i), model or "") for i, s in enumerate(steps)]
        if self.problems or title is None or model is None:
            return None
        return Lesson(name, title, model, tuple(s for s in built if s), source, path)

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
        check = self.check(data["check"], (*path, "check"), model) if "check" in data else None
        if title is None:
            return None
        return Step(title, body, page, MappingProxyType(dict(view)), check)

    def view_keys(self, view: dict, path: Path_) -> None:
        """Each key one the app reads from its URL, with a value it can read."""
        for key, value in view.items():
            if key not in VIEW_KEYS:
                self.add((*path, key), f"unknown view key {key!r}; the app's URL keys: "
                         f"{', '.join(sorted(VIEW_KEYS))}")  # fmt: skip
                continue
            try:
                URL_KEYS[key](str(value))
            except ValueError:
                self.add((*path, key), f"view key {key!r} cannot be {value!r}")

    def check(self, data: Any, path: Path_, model: str) -> Check | None:
        if not isinstance(data, dict) or data.get("kind") not in CHECK_KINDS:
            kind = data.get("kind") if isinstance(data, dict) else None
            self.add(
                (*path, "kind"), f"unknown check kind {kind!r}; kinds: {', '.join(CHECK_KINDS)}"
            )
            return None
        required, optional = CHECK_FIELDS[data["kind"]]
        known = {"kind": True, "question": False} | dict.fromkeys(required, True)
        self.keys(data, path, known | dict.fromkeys(optional, False), f"a {data['kind']} check")
        args = {k: v for k, v in data.items() if k not in ("kind", "question")}
        self.fields(args, path)
        if data["kind"] == "number" and isinstance(args.get("args"), dict):
            quantity = args.get("quantity")
            if quantity not in NUMBER_FIELDS:
                self.add((*path, "quantity"), f"unknown quantity {quantity!r}; quantities: "
                         f"{', '.join(NUMBER_FIELDS)}")  # fmt: skip
            else:
                fields = dict.fromkeys(NUMBER_FIELDS[quantity], True)
                self.keys(args["args"], (*path, "args"), fields, f"the {quantity} args")
                self.fields(args["args"], (*path, "args"))
                for key, message in arg_problems(quantity, args["args"]):
                    self.add((*path, "args", key), message)
        elif data["kind"] == "number":
            self.add((*path, "args"), "a number check's 'args' must be a mapping")
        where = f"{self.filename}:{self.line(path)}"
        question = self.text(data, "question", path, "the check")
        return Check(data["kind"], MappingProxyType(args), model, question, where)

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
        layers = args.get("layers", [])
        if not isinstance(layers, list) or not all(type(v) is int and v >= 0 for v in layers):
            self.add((*path, "layers"), "'layers' must be a list of layer numbers from 0")
        if "d_model" in args and (type(args["d_model"]) is not int or args["d_model"] < 2
                                  or args["d_model"] % 2):  # fmt: skip
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
            self.add((*path, "options"), "YAML reads yes, no, true, false and null as values, "
                     "not text: put such an option in quotes")  # fmt: skip
        elif not all(isinstance(o, (str, int, float)) and str(o).strip() for o in options):
            self.add((*path, "options"), "each option must be a non-empty text or number")
        elif type(args.get("correct")) is int and args["correct"] >= len(options):
            self.add((*path, "correct"), f"'correct' is {args['correct']} but there are "
                     f"{len(options)} options (counted from 0)")  # fmt: skip
