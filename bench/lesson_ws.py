"""The lesson mode of ``bench/classroom_ws.py``: N students of one class, each a Streamlit session
over websockets (no browser), join on the Lesson page with a name, click Next up to the lesson's
first ``head`` step, wait for each other, then all click a head at once. A student's time runs
from sending the click to the end of the run that shows the feedback on it.

Reported: p50/p95 of those times, answers stored in the database against answers submitted,
and every error (a timeout, an exception or error message that is not a graded answer's
feedback, no feedback, a step never reached).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

import viz_transformer as vt
from bench.common import table


@dataclass
class Client:
    """One student's session: what its last run drew (widget ids by label, headings, alerts)."""

    ws: ClientConnection
    query: str
    page: str = "lesson"
    page_hash: str = ""
    widgets: dict[str, str] = field(default_factory=dict)  # label -> widget id
    pills: dict[str, str] = field(default_factory=dict)  # an option's label -> its row's id
    headings: list[str] = field(default_factory=list)
    alerts: list[tuple[str, str]] = field(default_factory=list)  # (format, body)
    exceptions: list[str] = field(default_factory=list)
    charts: int = 0  # plotly charts the last run drew
    fragments: dict[str, float] = field(default_factory=dict)  # auto-rerun fragment -> seconds

    async def run(self, states: Sequence[WidgetState] = (), fragment: str = "") -> None:
        """Ask for a run of the page (with ``states``: the clicked button, the typed name), or
        of one of its fragments as a browser's timer does (``fragment``: its id in
        ``fragments``), and read until it ends (a fragment's ``st.rerun()``: until the page's
        run it asks for ends)."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query
        msg.rerun_script.page_name = self.page
        msg.rerun_script.page_script_hash = self.page_hash
        msg.rerun_script.widget_states.widgets.extend(states)
        if fragment:
            msg.rerun_script.fragment_id = fragment
            msg.rerun_script.is_auto_rerun = True
        self.headings, self.alerts, self.exceptions, self.charts = [], [], [], 0
        await self.ws.send(msg.SerializeToString())
        async for raw in self.ws:
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            if self._observe(fwd):
                return

    def _observe(self, msg: ForwardMsg) -> bool:
        kind = msg.WhichOneof("type")
        if kind == "navigation":  # the page app.py's navigation ran: ask for it again
            self.page_hash = msg.navigation.page_script_hash
        elif kind == "auto_rerun":  # a fragment with run_every: the browser reruns it
            self.fragments[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string  # the token, once joined
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            which = element.WhichOneof("type")
            if which in ("button", "text_input"):
                widget = getattr(element, which)
                self.widgets[widget.label] = widget.id
            elif which == "button_group":
                group = element.button_group
                self.pills.update({o.content: group.id for o in group.options})
            elif which == "heading":
                self.headings.append(element.heading.body)
            elif which == "alert":
                self.alerts.append((str(element.alert.format), element.alert.body))
            elif which == "plotly_chart":
                self.charts += 1
            elif which == "exception":
                self.exceptions.append(element.exception.message)
        elif kind == "script_finished":
            return msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
        return False

    async def click(self, label: str, typed: dict[str, str] | None = None) -> None:
        """Click the button or pill ``label`` (with text inputs ``typed``: label -> text)."""
        if label in self.pills:  # a pill's value on the wire: its label
            states = [WidgetState(id=self.pills[label])]
            states[0].string_array_value.data.append(label)
        else:
            states = [WidgetState(id=self.widgets[label], trigger_value=True)]
        states += [
            WidgetState(id=self.widgets[k], string_value=v) for k, v in (typed or {}).items()
        ]
        await self.run(states)


@dataclass
class Student:
    """One student's outcome."""

    name: str
    sent: bool = False  # the answer's click went to the server
    seconds: float | None = None
    errors: list[str] = field(default_factory=list)


def feedback(client: Client) -> str | None:
    """The feedback on a graded answer in the last run, if any (``Your answer: ...``)."""
    return next((body for _, body in client.alerts if body.startswith("Your answer")), None)


async def attend(url: str, code: str, student: Student, step: vt.Step, answer: str,
                 barrier: asyncio.Barrier, timeout: float) -> None:  # fmt: skip
    """Join class ``code``, go to ``step``, wait for the class, answer; into ``student``."""
    ws_url = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
    waited = False
    try:
        async with connect(ws_url, subprotocols=["streamlit"], max_size=None) as ws:
            client = Client(ws, f"class={code}")
            async with asyncio.timeout(timeout):
                await client.run()
                await client.click("Join", {"Your name": student.name})
                while step.title not in client.headings and "Next" in client.widgets:
                    await client.click("Next")
                    student.errors += client.exceptions
            if step.title not in client.headings:
                student.errors.append(f"never reached the step {step.title!r}")
            waited = True
            await barrier.wait()
            async with asyncio.timeout(timeout):
                start = time.monotonic()
                student.sent = answer in client.pills
                await client.click(answer)
                seconds = time.monotonic() - start
            student.errors += client.exceptions
            student.errors += [b for f, b in client.alerts if not b.startswith("Your answer")]
            if feedback(client) is None:
                student.errors.append("no feedback on the answer")
            elif not student.errors:
                student.seconds = seconds
    except TimeoutError:
        student.errors.append(f"timed out after {timeout:.0f} s ({'answer' if waited else 'join'})")
    except (OSError, WebSocketException, KeyError) as exc:
        student.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        if not waited:
            await barrier.wait()  # the others do not wait for a student who never got there


def head_step(lesson: vt.Lesson) -> tuple[int, vt.Step]:
    """The lesson's first step with a ``head`` check."""
    return next(
        (i, s) for i, s in enumerate(lesson.steps) if s.question and s.question.kind == "head"
    )


def measure_lesson(url: str, db_url: str, lesson_name: str, n: int, timeout: float) -> dict:
    """``n`` students of a new class of ``lesson_name`` (in the database at ``db_url``, which
    the app at ``url`` uses too) answer its first ``head`` step at once."""
    store = vt.classroom(db_url)
    lesson = vt.load_lesson(lesson_name)
    index, step = head_step(lesson)
    code, _ = store.create(lesson)
    answer = vt.grade(step.question, "L0 H0").expected  # half the class right, half not
    wrong = "L0 H0" if answer != "L0 H0" else "L0 H1"
    students = [Student(f"student {i + 1}") for i in range(n)]

    async def everyone() -> None:
        barrier = asyncio.Barrier(n)
        await asyncio.gather(*(attend(url, code, s, step, answer if i % 2 else wrong, barrier,
                                      timeout) for i, s in enumerate(students)))  # fmt: skip

    start = time.monotonic()
    asyncio.run(everyone())
    times = sorted(s.seconds for s in students if s.seconds is not None)
    submitted = sum(1 for s in students if s.sent)
    return {
        "url": url, "database": db_url.split(":", 1)[0], "lesson": lesson_name, "step": index,
        "students": n, "stored": store.count(code), "submitted": submitted, "times": times,
        "errors": [f"{s.name}: {e}" for s in students for e in s.errors],
        "wall_s": time.monotonic() - start,
    }  # fmt: skip


def percentile(times: list[float], q: float) -> float:
    """Nearest-rank percentile; ``inf`` for no times."""
    return times[max(0, math.ceil(q / 100 * len(times)) - 1)] if times else math.inf


@contextmanager
def database(kind: str) -> Iterator[str]:
    """A fresh database for one run: ``sqlite`` (a file in a temporary folder), ``postgres``
    (a temporary server started as the store's tests start it, but writing to disk), or a
    SQLAlchemy URL as given."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="lesson-ws-") as folder:
            yield f"sqlite:///{Path(folder) / 'classes.sqlite3'}"
    elif kind == "postgres":
        from viz_transformer.testing.postgres import temporary_postgres

        with temporary_postgres(fsync=True) as url:  # durable, as a real server
            yield url
    else:
        yield kind


def row(replicas: int, out: dict) -> list[object]:
    """One line of the table: database, replicas, students, stored/submitted, p50, p95, errors."""
    times = out["times"]
    return [out["database"], replicas, out["students"], f"{out['stored']} / {out['submitted']}",
            f"{percentile(times, 50):.2f}", f"{percentile(times, 95):.2f}", len(out["errors"]),
            f"{out['wall_s']:.0f}", f"{out['load_average_before']:.1f}"]  # fmt: skip


HEADER = ["database", "replicas", "students", "answers stored / submitted", "p50 (s)", "p95 (s)",
          "errors", "wall (s)", "load average before"]  # fmt: skip
NOTE = (
    "`bench/classroom_ws.py --lesson`: every student a Streamlit websocket client (no browser) "
    "on the Lesson page through `python -m viz_transformer serve` (HAProxy in front): each joins "
    "the class with a name, clicks Next up to the lesson's first `head` step, waits for the "
    "others, then all click a head at once (half right, half wrong). Time: the click sent -> the "
    "end of the run that shows its feedback (grading on the lesson's model and the database "
    "write included). Stored: rows in the answers table afterwards. PostgreSQL: a temporary "
    "server with fsync on. Target: 60 students, 0 lost, p95 < 1 s."
)


def run_lessons(args: argparse.Namespace, serving: Callable[[int], AbstractContextManager[str]],
                write_section: Callable[..., None]) -> int:  # fmt: skip
    """The lesson mode for every database of ``--db`` and replica count of ``--serve`` (or the
    app at ``--url``, whose database ``--db`` must name); the exit status."""
    rows, failed = [], False
    for kind in args.db.split(","):
        with database(kind) as db_url:
            os.environ["VT_DATABASE_URL"] = db_url  # the replicas serve started read it
            counts = [int(c) for c in args.serve.split(",")] if args.serve else [0]
            for n in counts:
                with serving(n) if n else nullcontext(args.url) as url:
                    load = os.getloadavg()[0]
                    out = measure_lesson(url, db_url, args.lesson, args.sessions, args.timeout)
                out["load_average_before"] = load
                out["database"] = kind if "://" not in kind else out["database"]
                print(f"{kind}, {n or 'given'} replicas: " + " | ".join(map(str, row(n, out))))
                print("\n".join(f"  {e}" for e in out["errors"][:20]), flush=True)
                rows.append(row(n, out))
                failed |= bool(out["errors"]) or out["stored"] != out["submitted"]
    if args.serve:
        write_section("classroom_lesson", "A class answering a lesson's step at once",
                      f"{NOTE}\n\n{table(HEADER, rows)}", script="classroom_ws")  # fmt: skip
    return 1 if failed else 0
