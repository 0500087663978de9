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
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

import viz_transformer as vt
from bench.harness.common import table
from bench.harness.server import database
from bench.harness.stats import percentile
from bench.harness.ws import Client


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
    code, _ = store.teacher.create(lesson)
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
        "students": n, "stored": store.students.count(code), "submitted": submitted, "times": times,
        "errors": [f"{s.name}: {e}" for s in students for e in s.errors],
        "wall_s": time.monotonic() - start,
    }  # fmt: skip


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
