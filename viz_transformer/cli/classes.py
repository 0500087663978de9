"""``python -m viz_transformer class create|export``: open a class on a lesson, and export its
answers as CSV (docs/lessons.md).

``class create LESSON [--db URL] [--url BASE]`` prints the class code, the students' link and
the teacher's link (the only place the teacher's key is shown: only its hash is stored).
``class export CODE --key KEY [--db URL]`` writes every answer as CSV to stdout. Bad input gets
one line on stderr and exit 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from sqlalchemy.exc import SQLAlchemyError

from viz_transformer.classroom import classroom, links

DEFAULT_BASE = "http://localhost:8501"  # where `streamlit run app.py` and `serve` listen


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m viz_transformer class",
                                description="Classes of a lesson (docs/lessons.md).")  # fmt: skip
    sub = p.add_subparsers(dest="action", required=True)
    db_help = "database URL (default: VT_DATABASE_URL, else a SQLite file in the cache folder)"
    create = sub.add_parser("create", help="open a class on a lesson; print its links")
    create.add_argument("lesson", help="a lesson name (vt.lessons()) or a .yaml file")
    create.add_argument("--db", help=db_help)
    create.add_argument("--url", default=DEFAULT_BASE, help=f"the app's address ({DEFAULT_BASE})")
    export = sub.add_parser("export", help="write a class's answers as CSV to stdout")
    export.add_argument("code", help="the class code")
    export.add_argument("--key", required=True, help="the teacher's key (in the teacher's link)")
    export.add_argument("--db", help=db_help)
    return p


def main(argv: list[str]) -> int:
    """Run ``class create`` or ``class export``; 0 on success, 1 on bad input."""
    args = _parser().parse_args(argv)
    try:
        store = classroom(args.db)
        if args.action == "create":
            code, key = store.create(args.lesson)
            students, teacher = links(args.url, code, key)
            title = store.lesson(code).title
            print(f"class code: {code}  ({title})\nstudents:   {students}\nteacher:    {teacher}")
            print("Keep the teacher's link: its key is shown only now.", file=sys.stderr)
        else:
            store.answers(args.code, args.key).to_csv(sys.stdout, index=False)
    except (ValueError, PermissionError, OSError, SQLAlchemyError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0
