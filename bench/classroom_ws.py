"""A classroom measured at the server alone: N Streamlit sessions over websockets, no browser.

Run: ``OMP_NUM_THREADS=1 python -m bench.classroom_ws --url URL --sessions N [--json PATH]``, or
``--serve 1,2`` to start ``python -m viz_transformer serve --replicas N`` itself for each count
and record them side by side in ``docs/benchmarks.md``. ``--lesson NAME --db sqlite,postgres``:
the lesson mode (``bench/lesson_ws.py``), students of one class answering a step at once.

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
import asyncio
import json
import os
import re
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import lesson_ws
from bench.common import CLASSROOM_MARKERS, classroom_sentences, table, write_section
from bench.harness.server import serving
from bench.harness.server_cpu import cpu_seconds, server_processes
from bench.harness.stats import percentile

ROOT = Path(__file__).resolve().parents[1]

PAGE = "attention_maps"
MODEL = "paper-en-pt"
WORD = re.compile(r"[A-Za-z]+")


@dataclass
class Session:
    """One student: the sentence in its URL, its time, what it saw and what went wrong."""

    marker: str
    sentence: str
    seconds: float | None = None
    saw_own: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.seconds is not None and not self.errors


def sentences(n: int) -> list[Session]:
    """``n`` sessions, each with its own marker word and sentence."""
    return [Session(m, s) for m, s in classroom_sentences(n, "--sessions")]


def rerun_request(sentence: str, model: str = MODEL, page: str = PAGE) -> bytes:
    """The ``BackMsg`` a browser sends when it opens ``/<page>?model=...&sentence=...``."""
    msg = BackMsg()
    msg.rerun_script.query_string = urllib.parse.urlencode({"model": model, "sentence": sentence})
    msg.rerun_script.page_name = page
    return msg.SerializeToString()


def figure_words(spec: str) -> set[str]:
    """Every word in the strings of a plotly figure's JSON (token labels, hover text, titles)."""
    words: set[str] = set()
    todo: list[object] = [json.loads(spec)]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            words.update(WORD.findall(item))
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return words


def observe(session: Session, msg: ForwardMsg, others: set[str]) -> bool:
    """Check one message for ``session``; True when its run is over (well or not).

    Args:
        session: updated in place (``saw_own``, ``errors``).
        msg: a ``ForwardMsg`` from the server.
        others: every other session's marker word.
    """
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        if element.WhichOneof("type") == "exception":
            session.errors.append(f"the app showed an exception: {element.exception.message}")
        elif element.WhichOneof("type") == "plotly_chart":
            words = figure_words(element.plotly_chart.spec)
            session.saw_own |= session.marker in words
            for word in sorted(others & words):
                session.errors.append(f"a chart holds another session's sentence ({word})")
    elif kind == "page_not_found":
        session.errors.append(f"page not found: {msg.page_not_found.page_name}")
        return True
    elif kind == "script_finished":
        if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return False
        if not session.saw_own:
            session.errors.append("the run finished without a chart of its own sentence")
        return True
    return False


async def run_session(ws_url: str, session: Session, others: set[str], timeout: float) -> None:
    """Open a session, ask for the page with its sentence, read until the run is over."""
    start = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            async with connect(ws_url, subprotocols=["streamlit"], max_size=None) as ws:
                await ws.send(rerun_request(session.sentence))
                async for raw in ws:
                    msg = ForwardMsg()
                    msg.ParseFromString(raw)
                    if observe(session, msg, others):
                        break
        if session.saw_own:
            session.seconds = time.monotonic() - start
    except TimeoutError:
        session.errors.append(f"no run of its own sentence within {timeout:.0f} s")
    except (OSError, WebSocketException) as exc:  # refused, reset, closed by the server
        session.errors.append(f"connection failed: {type(exc).__name__}: {exc}")


async def run_all(url: str, sessions: list[Session], timeout: float) -> None:
    """Every session at once against the app at ``url``."""
    ws_url = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
    markers = {s.marker for s in sessions}
    await asyncio.gather(*(run_session(ws_url, s, markers - {s.marker}, timeout) for s in sessions))


def measure(url: str, n: int, timeout: float) -> dict[str, object]:
    """Run ``n`` sessions against ``url``; the outcome as written by ``--json``."""
    sessions = sentences(n)
    pids = server_processes(urllib.parse.urlsplit(url).port or 80)
    load = os.getloadavg()[0]  # the machine is shared: how busy it was before the run
    cpu0, start = cpu_seconds(pids), time.monotonic()
    asyncio.run(run_all(url, sessions, timeout))
    wall, cpu = time.monotonic() - start, cpu_seconds(pids) - cpu0
    times = [s.seconds for s in sessions if s.seconds is not None]
    errors = [f"session {i} ({s.marker}): {e}" for i, s in enumerate(sessions) for e in s.errors]
    return {
        "url": url, "sessions": n, "errors": errors, "p50_s": percentile(times, 50),
        "p95_s": percentile(times, 95), "wall_s": wall, "server_processes": len(pids),
        "load_average_before": load,
        "server_cpu_s_per_run": cpu / n if pids else None,
        "per_session": [{"sentence": s.sentence, "seconds": s.seconds, "ok": s.ok}
                        for s in sessions],
    }  # fmt: skip


def summary(out: dict[str, object]) -> str:
    """The numbers on a few lines."""
    cpu = out["server_cpu_s_per_run"]
    lines = [
        f"{out['url']}: {out['sessions']} sessions in {out['wall_s']:.1f} s",
        f"p50 {out['p50_s']:.2f} s, p95 {out['p95_s']:.2f} s, errors {len(out['errors'])}",
        f"server CPU per run: {cpu:.3f} s over {out['server_processes']} processes"
        if cpu is not None else "server CPU per run: unknown (no process of ours listens there)",
        *(f"  {e}" for e in out["errors"][:20]),
    ]  # fmt: skip
    return "\n".join(lines)


def side_by_side(outcomes: dict[int, dict[str, object]]) -> str:
    """A Markdown table of the runs, one row per replica count."""
    rows = [[n, o["sessions"], f"{o['p50_s']:.2f}", f"{o['p95_s']:.2f}", len(o["errors"]),
             f"{o['server_cpu_s_per_run']:.3f}", f"{o['wall_s']:.1f}",
             f"{o['load_average_before']:.1f}"] for n, o in outcomes.items()]  # fmt: skip
    header = ["replicas", "sessions", "p50 (s)", "p95 (s)", "errors", "server CPU-s per run",
              "wall (s)", "load average before"]  # fmt: skip
    return table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running app, e.g. http://127.0.0.1:8501")
    where.add_argument("--serve", help="start serve with these replica counts, e.g. 1,2")
    parser.add_argument("--sessions", type=int, default=10, help=f"1 to {len(CLASSROOM_MARKERS)}")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per session")
    parser.add_argument("--json", type=Path, help="write the outcome here")
    parser.add_argument("--lesson", help="lesson mode: students of a class of this lesson answer "
                        "a step at once (bench/lesson_ws.py)")  # fmt: skip
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
