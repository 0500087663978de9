"""A classroom measured at the server alone: N Streamlit sessions over websockets, no browser.

Run: ``OMP_NUM_THREADS=1 python -m bench.classroom_ws --url URL --sessions N [--json PATH]``, or
``--serve 1,2`` to start ``python -m viz_transformer serve --replicas N`` itself for each count
and record them side by side in ``docs/benchmarks.md``. ``--lesson NAME --db sqlite,postgres``:
the lesson mode (``bench/harness/lesson_ws.py``), students of one class answering a step at once.

Each session is a real client of Streamlit's protocol (``/_stcore/stream``: a ``BackMsg`` asks for
a run of the Attention maps page with the session's own sentence in the query string;
``ForwardMsg``s bring the page back). All sessions start at once, as a class opening the
teacher's link. A session's time runs from its
connection to the end of the run that drew a chart holding a token of its own sentence. Errors: a
timeout, an exception shown by the app, a run without its own sentence, and a chart holding
another session's marker word. Prints p50, p95, errors and the server's CPU seconds per run (all
its processes: replicas, HAProxy, serve; ``bench/harness/server_cpu.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness import lesson_ws
from bench.harness.common import CLASSROOM_MARKERS, write_section
from bench.harness.server import serving
from bench.harness.ws_classroom import MODEL, measure, sentences, side_by_side, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running app, e.g. http://127.0.0.1:8501")
    where.add_argument("--serve", help="start serve with these replica counts, e.g. 1,2")
    parser.add_argument("--sessions", type=int, default=10, help=f"1 to {len(CLASSROOM_MARKERS)}")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per session")
    parser.add_argument("--json", type=Path, help="write the outcome here")
    parser.add_argument("--lesson", help="lesson mode: students of a class of this lesson answer "
                        "a step at once (bench/harness/lesson_ws.py)")  # fmt: skip
    parser.add_argument(
        "--db",
        default="sqlite",
        help="lesson mode: sqlite, postgres (each a "
        "fresh temporary one) or the URL the app at --url uses; comma-separated",
    )
    args = parser.parse_args()
    if args.lesson:
        sys.exit(lesson_ws.run_lessons(args, serving, write_section))
    try:
        sentences(args.sessions)
        counts = [int(c) for c in args.serve.split(",")] if args.serve else []
    except ValueError as exc:
        parser.error(str(exc))
    if args.url:
        outcomes = {0: measure(args.url, args.sessions, args.timeout)}
    else:
        outcomes = {}
        for n in counts:
            with serving(n) as url:
                outcomes[n] = measure(url, args.sessions, args.timeout)
    for out in outcomes.values():
        print(summary(out), flush=True)
    if args.json:
        written = {str(n): o for n, o in outcomes.items()} if counts else outcomes[0]
        args.json.write_text(json.dumps(written, indent=1))
    if counts:
        write_section("classroom_ws", "A classroom at the server alone: replicas behind HAProxy",
                      f"{RECORD_NOTE}\n\n{side_by_side(outcomes)}")  # fmt: skip
    sys.exit(1 if any(o["errors"] for o in outcomes.values()) else 0)


RECORD_NOTE = (
    "`bench/classroom_ws.py`: every session a Streamlit websocket client (no browser) opening the "
    f"Attention maps page of `{MODEL}` with its own sentence in the URL, all at once, through "
    "`python -m viz_transformer serve --replicas N` (HAProxy in front). Time: connection -> end "
    "of the run whose chart holds the session's own word. Server CPU: every process of `serve` "
    "(replicas, HAProxy, serve) per session's run, read from /proc. The driver runs on the same "
    "2 cores (an asyncio loop, a small share)."
)


if __name__ == "__main__":
    main()
