"""``python -m viz_transformer lesson validate FILE...``: validate lesson files on their model.

Prints one ``FILE:LINE: what is wrong`` line per problem (bad YAML, a missing or unknown field,
an unknown page, check kind or model, a layer, head or token index the model does not have, a
sentence it cannot read) and exits 2; exits 0 when every file is fine.
"""

from __future__ import annotations

import argparse
import sys

from viz_transformer.course import load_lesson, validate_lesson


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m viz_transformer lesson",
        description="Lesson files (docs/lessons.md).",
    )
    sub = p.add_subparsers(dest="action", required=True)
    validate = sub.add_parser("validate", help="validate lesson files on their model")
    validate.add_argument("files", nargs="+", help="lesson .yaml files or built-in lesson names")
    return p


def main(argv: list[str]) -> int:
    """Run ``lesson validate``; 0 when every file is fine, 2 when one has a problem."""
    args = _parser().parse_args(argv)
    bad = 0
    for name in args.files:
        try:
            problems = validate_lesson(name)
        except ValueError as exc:  # no such file or lesson
            problems = [f"{name}:0: {' '.join(str(exc).split())}"]
        for line in problems:
            print(line)
        if problems:
            bad += 1
        else:
            lesson = load_lesson(name)
            graded = sum(s.question is not None and s.question.kind != "text" for s in lesson.steps)
            print(f"{name}: ok ({len(lesson.steps)} steps, {graded} graded)", file=sys.stderr)
    return 2 if bad else 0
