"""The class store under a class answering at once, without the app: R replica processes share
one database, N students (threads spread over them) join, open a step, then submit at the same
moment; each submit is timed from the call to its returned ``Grade`` (graded on the lesson's
model, then stored).

Run: ``OMP_NUM_THREADS=1 python bench/bench_class_store.py [--students 60] [--replicas 3]
[--db URL ...] [--postgres]``; without ``--db``: a fresh SQLite file in a temporary folder;
``--postgres`` adds a PostgreSQL server of its own (``viz_transformer.testing.postgres``).
Reports p50, p95 and max per engine, rows stored against submitted and errors, into its section
of ``docs/benchmarks.md``, twice: cold (the model loaded; the replica's traces of the lesson are
made by the store's warm-up thread while its students join, or by the first submits) and warm
(each replica graded the step once before). The app's own path (Streamlit, websockets,
HAProxy) is ``bench/classroom_ws.py``'s lesson mode.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.harness.common import table, write_section  # noqa: E402
from viz_transformer.testing.postgres import temporary_postgres  # noqa: E402

STEP, ANSWER = 4, "L0 H5"  # paper_tour's multi-head step: a head check on "I am a student."


def replica(url: str, code: str, students: int, warm: bool) -> None:
    """One replica process: its ``students`` join and open the step at once (threads), then it
    says ``ready``, waits for ``go`` on stdin, and they submit at once; prints the seconds per
    submit and the errors as JSON."""
    import functools

    import viz_transformer as vt
    from viz_transformer.course import traced

    traces = functools.lru_cache(maxsize=64)(traced)  # a server's trace cache, as the app's
    store = vt.classroom(url, traces)
    check = store.lessons.lesson(code).steps[STEP].question
    store.lessons.warm(code)  # as the class's first page on a replica of serve does
    vt.load_model(check.model)  # as a replica of serve, which loads the model before it listens
    if warm:
        vt.grade(check, ANSWER, traces)
    go, times, errors, joined = threading.Event(), [], [], threading.Barrier(students + 1)

    def student(i: int) -> None:
        token = None
        try:  # all at once, as a class joins
            token = store.students.join(code, f"student {os.getpid()}-{i}")
            store.students.move(code, token, STEP)
        except Exception as exc:  # every failure counted, none hidden
            errors.append(repr(exc))
        joined.wait()
        go.wait()
        start = time.perf_counter()
        try:
            store.students.submit(code, token, STEP, ANSWER)
            times.append(time.perf_counter() - start)
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    for t in threads:
        t.start()
    joined.wait()
    print("ready", flush=True)
    sys.stdin.readline()
    go.set()
    for t in threads:
        t.join()
    print(json.dumps({"times": times, "errors": errors}), flush=True)


def run_class(url: str, students: int, replicas: int, warm: bool) -> list[object]:
    """One class of ``students`` over ``replicas`` processes; a table row."""
    import viz_transformer as vt

    store = vt.classroom(url)
    code, key = store.teacher.create("paper_tour")
    shares = [students // replicas + (i < students % replicas) for i in range(replicas)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, __file__, "--replica", url, code, str(n), str(int(warm))],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        for n in shares
    ]  # fmt: skip
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    for p in procs:  # as close to one moment as pipes allow
        p.stdin.write("go\n")
        p.stdin.flush()
    times, errors = [], []
    for p in procs:
        out = json.loads(p.stdout.readline())
        times += out["times"]
        errors += out["errors"]
        p.wait()
    ms = sorted(t * 1000 for t in times)
    p95 = ms[max(0, round(0.95 * len(ms)) - 1)] if ms else float("nan")
    stored = len(store.teacher.answers(code, key))
    engine = store.engine.dialect.name
    return [engine, "warm" if warm else "cold", students, replicas,
            f"{statistics.median(ms):.0f}" if ms else "-", f"{p95:.0f}",
            f"{ms[-1]:.0f}" if ms else "-", f"{stored}/{students}", len(errors)]  # fmt: skip


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--replica":
        url, code, n, warm = sys.argv[2:6]
        replica(url, code, int(n), warm == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--db", action="append", help="database URL (repeat for several)")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="also a PostgreSQL server of its own (testing.postgres, fsync on)",
    )
    args = parser.parse_args()
    urls = args.db or [f"sqlite:///{tempfile.mkdtemp(prefix='vt-bench-')}/classes.sqlite3"]
    load = os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        if args.postgres:
            urls.append(stack.enter_context(temporary_postgres(fsync=True)))
        rows = [run_class(url, args.students, args.replicas, warm)
                for url in urls for warm in (False, True)]  # fmt: skip
    header = ["engine", "trace", "students", "replicas", "p50 ms", "p95 ms", "max ms",
              "stored", "errors"]  # fmt: skip
    body = (
        f"Load average at the start: {load:.1f} on {os.cpu_count()} cores.\n\n"
        + table(header, rows)
        + "\n\nFrom the call to `submit` to its `Grade`: grading on `paper-en-pt` and the write."
    )
    write_section("bench_class_store", "Class store: a class submitting at once", body)


if __name__ == "__main__":
    main()
