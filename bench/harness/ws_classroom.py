"""A classroom of Streamlit sessions over websockets (``bench/classroom_ws.py``'s engine):
each session a ``Session`` with its own marker word and sentence, the ``BackMsg`` that asks
for the Attention maps page, ``observe`` checking each ``ForwardMsg`` for an exception or
another session's sentence, ``run_all`` running every session at once, ``measure`` and its
summaries.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from bench.harness.common import classroom_sentences, table
from bench.harness.server_cpu import cpu_seconds, server_processes
from bench.harness.stats import percentile

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
