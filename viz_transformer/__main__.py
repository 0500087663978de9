"""``python -m viz_transformer COMMAND ...``: the library's command-line tools.

``app``: the app (``streamlit run app.py``), warming the default model and Home's maps in the
background as it starts (``viz_transformer.serve.replica --background``).
``corpus``: head statistics over a corpus (``viz_transformer.cli.corpus``).
``serve``: app replicas behind HAProxy for a classroom (``viz_transformer.serve.cli``).
``lesson validate``: validate lesson files (``viz_transformer.cli.lessons``).
``class create|export|pace|pause|resume|names|remove|close|viewer``: classes of a lesson, their
answers and the teacher's controls (``viz_transformer.cli.classes``).
"""

from __future__ import annotations

import sys

USAGE = (
    "usage: python -m viz_transformer app [STREAMLIT FLAGS]   (from the checkout)\n"
    "       python -m viz_transformer corpus --model NAME --sentences FILE.txt --out DIR\n"
    "       python -m viz_transformer serve [--replicas N] [--port P] [--address A]\n"
    "       python -m viz_transformer lesson validate FILE...\n"
    "       python -m viz_transformer class create LESSON [--db URL] [--url BASE]\n"
    "       python -m viz_transformer class export|pause|resume|close|viewer CODE [--db URL]\n"
    "       python -m viz_transformer class pace CODE N|all   (class remove CODE NAME,\n"
    "       class names CODE hide|show; the teacher's key from VT_TEACHER_KEY or a prompt)"
)


def main(argv: list[str] | None = None) -> int:
    """Run the command named by the first argument; its exit status."""
    args = sys.argv[1:] if argv is None else argv
    # each command imported only when named: one command's imports do not slow the other
    if args and args[0] == "app":
        from viz_transformer.serve.replica import main as replica_main

        replica_main(["--background", "app.py", *args[1:]])
        return 0
    if args and args[0] == "corpus":
        from viz_transformer.cli.corpus import main as corpus_main

        return corpus_main(args[1:])
    if args and args[0] == "serve":
        from viz_transformer.serve.cli import main as serve_main

        return serve_main(args[1:])
    if args and args[0] == "lesson":
        from viz_transformer.cli.lessons import main as lesson_main

        return lesson_main(args[1:])
    if args and args[0] == "class":
        from viz_transformer.cli.classes import main as class_main

        return class_main(args[1:])
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
