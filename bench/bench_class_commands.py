"""How long each class command takes from the shell to its answer (issue 49: within 2 s on a quiet
machine): ``python -m viz_transformer class ...`` run as the teacher runs it, a new process each
time, on a fresh SQLite file, in the order of a lesson (create, pace, pause, resume, names,
viewer, export, remove, close).

Run: ``OMP_NUM_THREADS=1 python bench/bench_class_commands.py [--runs 3]``. Reports per command
the median wall seconds, the median CPU seconds of the process (user + system: what the wall time
is on a quiet machine, where one process runs alone on a core) and whether PyTorch was imported
(``-X importtime``), with the load average, into its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.harness.common import table, verdict, write_section  # noqa: E402

LIMIT_S = 2.0  # the target, on a quiet machine
NOTE = (
    "No command imports PyTorch or the lesson's model (`import viz_transformer` loads each "
    "public name on first use; `pace` counts the stored lesson's steps; `create` reads the "
    "lesson file and its model's spec, and grades nothing, so the question kinds' graders, the "
    "course quantities' computations and the registry's loading are imported only when an answer "
    "is graded or a model loads): Python, SQLAlchemy, pandas and YAML. Before (2026-12-02, load "
    "2.1-5.2): create 7.41 s wall, 3.90 CPU s, importing PyTorch through four routes; issue 49 "
    "(load 4-10): create 9.8 s, pause 8.4 s, resume 12.0 s, viewer 17.5 s, every one loading "
    "PyTorch."
)
COMMANDS = (  # (label, arguments after the class code or lesson)
    ("create", ["create", "paper_tour"]),
    ("pace", ["pace", "{code}", "3"]),
    ("pause", ["pause", "{code}"]),
    ("resume", ["resume", "{code}"]),
    ("names", ["names", "{code}", "hide"]),
    ("viewer", ["viewer", "{code}"]),
    ("export", ["export", "{code}"]),
    ("remove", ["remove", "{code}", "Ada"]),
    ("close", ["close", "{code}"]),
)


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, bool, str]:
    """One command in a new process: (wall s, CPU s, whether torch was imported, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    cmd = [sys.executable, "-X", "importtime", "-m", "viz_transformer", "class", *args]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    torch = bool(re.search(r"\|\s+torch$", done.stderr, re.MULTILINE))
    return wall, cpu, torch, done.stdout


def lesson_of_commands(db: str, env: dict[str, str]) -> dict[str, tuple[float, float, bool]]:
    """Every command once, in a lesson's order, on class store ``db``."""
    times: dict[str, tuple[float, float, bool]] = {}
    code = ""
    for label, args in COMMANDS:
        args = [a.format(code=code) for a in args] + ["--db", db]
        wall, cpu, torch, out = run(args, env)
        if label == "create":
            code = re.search(r"class code: (\w+)", out)[1]
            env["VT_TEACHER_KEY"] = re.search(r"teacher key: (\w+)", out)[1]
            import viz_transformer as vt  # a student to remove, as a test join

            vt.classroom(db).students.join(code, "Ada")
        times[label] = (wall, cpu, torch)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    load = os.getloadavg()[0]
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.runs):
            runs.append(lesson_of_commands(f"sqlite:///{Path(folder) / f'c{i}.sqlite3'}", env))
    rows = []
    for label, _ in COMMANDS:
        wall = statistics.median(r[label][0] for r in runs)
        cpu = statistics.median(r[label][1] for r in runs)
        torch = "yes" if any(r[label][2] for r in runs) else "no"
        rows.append([label, f"{wall:.2f}", f"{cpu:.2f}", torch, verdict(cpu, LIMIT_S)])
    body = (
        f"Median of {args.runs} runs of each command, a new process each (`-X importtime` adds "
        f"a little); load average {load:.1f} at the start on this shared 2-core machine, "
        f"{os.getloadavg()[0]:.1f} at the end: the wall times are the busy machine's, the CPU "
        f"seconds what one quiet core takes. Target: {LIMIT_S:.0f} s on a quiet machine.\n\n"
        + table(["command", "wall s", "CPU s", "imports torch", "target"], rows)
        + "\n\n"
        + NOTE
    )
    write_section("bench_class_commands", "Class commands from the shell (issue 49)", body)


if __name__ == "__main__":
    main()
