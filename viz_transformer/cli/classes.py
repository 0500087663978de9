"""``python -m viz_transformer class ...``: open a class on a lesson, export its answers, and the
teacher's controls (docs/lessons.md).

``class create LESSON [--url BASE]`` prints the class code, the students' link, the teacher's
one-time link (it opens the class once, then nothing: no key in any URL) and the teacher's key
(the only place it is shown: only its hash is stored). Every other command takes the class code
and the teacher's key from ``VT_TEACHER_KEY`` (or a prompt that does not echo it), never from
the command line, where ``ps`` and the shell's history would keep it: ``export CODE`` (every
answer as CSV on stdout), ``link CODE [--url BASE]`` (a new one-time link), ``rotate CODE`` (a
new teacher's key: the old one, its links and every browser holding them end), ``pace CODE
N|all``, ``pause CODE``, ``resume CODE``, ``names CODE hide|show``, ``remove CODE NAME
[--may-rejoin]``, ``rejoin CODE NAME [--no]`` (whether a removed name may join again), ``close
CODE``, ``viewer CODE [--url BASE]`` (a new one-time read-only link). All take ``--db URL``. Bad
input gets one line on stderr and exit 1, never a traceback.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys

from sqlalchemy.exc import SQLAlchemyError

from viz_transformer.classroom import ClassStore, classroom, links, viewer_link
from viz_transformer.classroom.access import class_code

DEFAULT_BASE = "http://localhost:8501"  # where `streamlit run app.py` and `serve` listen
KEY_ENV = "VT_TEACHER_KEY"
NO_KEY_OPTION = (
    "the teacher's key is not read from the command line (ps and the shell's history keep it): "
    f"set {KEY_ENV}, or leave it unset to be asked for it."
)
CREATED = (
    "The teacher's link opens the class once, on one browser (the projector's or yours); "
    f"keep the teacher key (set {KEY_ENV} to it): it is shown only now, and class commands and "
    "a new one-time link (python -m viz_transformer class link {code}) need it."
)
DONE = {  # what each control command prints once done
    "pause": "paused: every student's page shows 'Eyes on the teacher'.",
    "resume": "resumed: every student's page shows their step again.",
    "close": "closed: no more joins or answers; the answers stay (class export).",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m viz_transformer class", description="Classes of a lesson (docs/lessons.md)."
    )
    sub = p.add_subparsers(dest="action", required=True)
    db_help = "database URL (default: VT_DATABASE_URL, else a SQLite file in the cache folder)"
    url_help = f"the app's address ({DEFAULT_BASE})"
    create = sub.add_parser("create", help="open a class on a lesson; print its links")
    create.add_argument("lesson", help="a lesson name (vt.lessons()) or a .yaml file")
    create.add_argument("--url", default=DEFAULT_BASE, help=url_help)
    helps = {
        "export": "write a class's answers as CSV to stdout",
        "link": "print a new one-time link that opens the Teacher page once",
        "rotate": "make a new teacher's key; the old one and every browser holding it end",
        "pace": "let students go up to step N (from 1), or 'all'",
        "pause": "every student's page shows 'Eyes on the teacher'",
        "resume": "end a pause",
        "names": "hide students' names on the Teacher page (pseudonyms), or show them",
        "remove": "remove a student (and their answers) by name",
        "rejoin": "let a removed name join again (--no: not)",
        "close": "no more joins or answers (the answers stay)",
        "viewer": "print a new one-time read-only link for a co-teacher (older ones end)",
    }
    for action, text in helps.items():
        cmd = sub.add_parser(action, help=f"{text}; key from {KEY_ENV} or a prompt")
        cmd.add_argument("code", help="the class code")
        if action == "pace":
            cmd.add_argument("step", help="the last step students may open (from 1), or 'all'")
        elif action == "names":
            cmd.add_argument("shown", choices=("hide", "show"))
        elif action in ("remove", "rejoin"):
            cmd.add_argument("name", help="the student's name as the Teacher page shows it")
            flag, said = (
                ("--may-rejoin", "the name may join again")
                if action == "remove"
                else ("--no", "the name may not join again")
            )
            cmd.add_argument(flag, action="store_true", help=said)
        elif action in ("viewer", "link"):
            cmd.add_argument("--url", default=DEFAULT_BASE, help=url_help)
        cmd.add_argument("--key", help=argparse.SUPPRESS)  # refused with a message: see NO_KEY
    for cmd in sub.choices.values():
        cmd.add_argument("--db", help=db_help)
    return p


def teacher_key() -> str:
    """The teacher's key: ``VT_TEACHER_KEY``, else typed at a prompt that does not echo it.

    Raises:
        ValueError: neither (no terminal to ask on).
    """
    key = os.environ.get(KEY_ENV, "").strip()
    if key:
        return key
    if not sys.stdin.isatty():
        raise ValueError(f"set {KEY_ENV} to the teacher's key (printed by class create).")
    key = getpass.getpass("Teacher's key (printed by class create): ").strip()
    if not key:
        raise ValueError("no key given.")
    return key


def _pace(step: str) -> int | None:
    if step.strip().lower() == "all":
        return None
    try:
        return int(step)
    except ValueError:
        raise ValueError(f"the pace is a step number from 1, or 'all'; not {step!r}.") from None


def control(store: ClassStore, args: argparse.Namespace, key: str) -> str:
    """Run one of the teacher's commands on ``store``; what to print (stdout)."""
    code = class_code(args.code)  # as stored: the links print it so
    teacher, access = store.teacher, store.access
    if args.action == "export":
        teacher.answers(code, key).to_csv(sys.stdout, index=False)
        return ""
    if args.action == "pace":
        pace = _pace(args.step)
        teacher.set_pace(code, key, pace)
        return "pace lifted: every step is open." if pace is None else f"pace: up to step {pace}."
    if args.action == "names":
        teacher.hide_names(code, key, args.shown == "hide")
        return f"names {'hidden (pseudonyms)' if args.shown == 'hide' else 'shown'}."
    if args.action == "remove":
        name = teacher.remove(code, key, args.name, args.may_rejoin)
        back = "may join again" if args.may_rejoin else "may not join again (class rejoin)"
        return f"removed {name!r} and their answers; the name {back}."
    if args.action == "rejoin":
        teacher.let_rejoin(code, key, args.name, not args.no)
        return f"{args.name!r} {'may not' if args.no else 'may'} join again."
    if args.action == "viewer":
        return f"read-only link: {viewer_link(args.url, code, access.read_only_link(code, key))}"
    if args.action == "link":
        return f"teacher:    {links(args.url, code, access.one_time_link(code, key))[1]}"
    if args.action == "rotate":
        new = access.rotate(code, key)
        return (
            f"new teacher key: {new}\nThe old key opens nothing now, and every browser and "
            "one-time link that held it is ended at its next redraw. Set VT_TEACHER_KEY to the "
            "new key for class commands."
        )
    {"pause": teacher.pause, "resume": teacher.resume, "close": teacher.close}[args.action](
        code, key
    )
    return DONE[args.action]


def main(argv: list[str]) -> int:
    """Run a ``class`` command; 0 on success, 1 on bad input."""
    args = _parser().parse_args(argv)
    try:
        if getattr(args, "key", None) is not None:
            raise ValueError(NO_KEY_OPTION)
        store = classroom(args.db)
        if args.action == "create":
            code, key = store.teacher.create(args.lesson)
            students, teacher = links(args.url, code, store.access.one_time_link(code, key))
            title = store.lessons.lesson(code).title
            print(f"class code: {code}  ({title})\nstudents:   {students}\nteacher:    {teacher}")
            print(f"teacher key: {key}")
            print(CREATED.format(code=code), file=sys.stderr)
        else:
            said = control(store, args, teacher_key())
            if said:
                print(said)
    except (ValueError, PermissionError, OSError, SQLAlchemyError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 0
