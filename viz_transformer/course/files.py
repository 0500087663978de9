"""Lesson files: where they are (built in, in ``viz_transformer/course/curriculum/``, or in a
teacher's ``VT_LESSON_DIR``), listing and locating them, and loading one by name or path.

Reading a file's text into a ``Lesson`` with its shape validated is ``shape.read_lesson``; what
needs the model itself (a layer it lacks, a sentence it cannot read) is ``validate_lesson`` in
``validation.py``.
"""

from __future__ import annotations

from pathlib import Path

from viz_transformer import settings
from viz_transformer.course.lesson import Lesson
from viz_transformer.course.shape import LessonError, read_lesson

SUFFIXES = (".yaml", ".yml")


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
    """Read a lesson by name (``vt.lessons()``) or path and validate its shape.

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
