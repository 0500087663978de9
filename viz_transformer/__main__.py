"""``python -m viz_transformer COMMAND ...``: the library's command-line tools.

``corpus``: head statistics over a corpus (``viz_transformer.cli.corpus``).
"""

from __future__ import annotations

import sys

USAGE = "usage: python -m viz_transformer corpus --model NAME --sentences FILE.txt --out DIR"


def main(argv: list[str] | None = None) -> int:
    """Run the command named by the first argument; its exit status."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "corpus":
        from viz_transformer.cli.corpus import main as corpus_main

        return corpus_main(args[1:])
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
