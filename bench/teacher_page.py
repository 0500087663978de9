"""The Teacher page of a full class, warm: 60 students who each opened and answered every step of
a 12-step lesson, drawn by ``python -m viz_transformer serve`` for a websocket client.

Run: ``OMP_NUM_THREADS=1 python -m bench.teacher_page [--students 60] [--runs 10] [--db
sqlite,postgres]``. The lesson is the built-in ``paper_tour`` with its steps repeated up to 12;
each student answers each question once, right or wrong in turn (so wrong answers pile up). A
run's time goes from the request (a ``BackMsg`` asking for the page, as a reload does) to the end
of the run (``script_finished``): the roster, funnel and wrong-answer queries, the funnel figure
and the tables. The first run is the cold one; the median and max of the others are the warm
figures (target: under 1 s). Written to ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml
from websockets.asyncio.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import viz_transformer as vt
from bench.harness.common import table, write_section
from bench.harness.server import database, serving
from bench.harness.ws import Client
from viz_transformer import course as vt_lessons

STEPS = 12
TARGET_S = 1.0


def twelve_steps(folder: Path) -> Path:
    """``paper_tour`` with its steps repeated up to ``STEPS``, as a lesson file in ``folder``."""
    data = yaml.safe_load(vt.load_lesson("paper_tour").source)
    data["steps"] = [data["steps"][i % len(data["steps"])] for i in range(STEPS)]
    path = folder / "twelve_steps.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def fill(store: vt.ClassStore, lesson_path: Path, students: int) -> tuple[str, str]:
    """A class of ``lesson_path`` whose ``students`` opened and answered every step."""
    code, key = store.teacher.create(lesson_path)
    lesson = store.lessons.lesson(code)
    right = {
        i: vt.grade(s.question, "L0 H0", store.traces).expected
        for i, s in enumerate(lesson.steps)
        if s.question
    }
    for n in range(students):
        token = store.students.join(code, f"student {n + 1}")
        for i, step in enumerate(lesson.steps):
            store.students.move(code, token, i)
            if step.question is not None:
                wrong = "0" if step.question.kind == "number" else "L9 H9"
                store.students.submit(code, token, i, right[i] or "free text" if n % 2 else wrong)
    return code, key


async def times(url: str, code: str, once: str, runs: int) -> list[float]:
    """Seconds of ``runs`` runs of the Teacher page of class ``code`` in one session, opened by
    the one-time link ``once``."""
    ws_url = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
    out = []
    async with connect(ws_url, subprotocols=["streamlit"], max_size=None) as ws:
        client = Client(ws, f"class={code}&once={once}", page="teacher")
        for _ in range(runs):
            start = time.monotonic()
            await client.run()
            out.append(time.monotonic() - start)
            if client.exceptions or client.charts != 1 or "Who is where" not in client.headings:
                raise RuntimeError(f"the page failed: {client.exceptions or client.headings}")
    return out


def measure(kind: str, students: int, runs: int) -> list[object]:
    """The table row of one database: fill a class, serve the app on it, time the page."""
    with tempfile.TemporaryDirectory() as folder, database(kind) as db_url:
        start = time.monotonic()
        traces = functools.lru_cache(maxsize=64)(vt_lessons.traced)  # a server's trace cache
        store = vt.classroom(db_url, traces)
        code, key = fill(store, twelve_steps(Path(folder)), students)
        print(f"{kind}: {students} students x {STEPS} steps stored in "
              f"{time.monotonic() - start:.0f} s", flush=True)  # fmt: skip
        os.environ["VT_DATABASE_URL"] = db_url
        with serving(1) as url:
            load = os.getloadavg()[0]
            got = asyncio.run(times(url, code, store.access.one_time_link(code, key), runs))
    warm = statistics.median(got[1:])
    return [kind, students, STEPS, f"{got[0]:.2f}", f"{warm:.2f}", f"{max(got[1:]):.2f}",
            "pass" if warm < TARGET_S else "miss", f"{load:.1f}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--runs", type=int, default=10, help="runs of the page (the first cold)")
    parser.add_argument("--db", default="sqlite,postgres", help="sqlite, postgres (each a fresh "
                        "temporary one) or a SQLAlchemy URL; comma-separated")  # fmt: skip
    args = parser.parse_args()
    rows = [measure(kind, args.students, args.runs) for kind in args.db.split(",")]
    header = ["database", "students", "steps", "cold (s)", "warm median (s)", "warm max (s)",
              "target < 1 s", "load average before"]  # fmt: skip
    note = (
        "`bench/teacher_page.py`: the Teacher page (opened by a one-time link, "
        "`?class=CODE&once=TOKEN`) of a class whose students each opened and answered every one "
        f"of {STEPS} steps (the built-in lesson's steps repeated), asked for by one websocket "
        "client of `serve --replicas 1` as a reload does, from the request to the end of the "
        "run (roster, funnel and wrong-answer queries, the funnel figure, the tables). The first "
        "run is cold; the others warm. PostgreSQL: a temporary server with fsync on."
    )
    write_section("teacher_page", "The Teacher page of a full class",
                  f"{note}\n\n{table(header, rows)}")  # fmt: skip
    sys.exit(0 if all(r[6] == "pass" for r in rows) else 1)


if __name__ == "__main__":
    main()
