"""Torch threads in a server process (issue 35): what one computation costs, in wall and CPU
seconds, when torch runs each computation on one thread or on every core, with one session
alone and with several sessions at once (Streamlit serves sessions in threads of one process).

Each case runs in its own process (``torch.set_num_threads`` fixed before any work): ``--sessions``
Python threads each do the same work with ``paper-en-pt`` on their own sentences of the built-in
corpus, after one warm-up trace: ``trace`` (a page view: ``vt.trace`` of ``--sentences``
sentences one by one) or ``corpus`` (the corpus page's background job: ``vt.corpus_stats`` of
``--sentences`` sentences in batches of 32, into a fresh folder). CPU seconds are the process's
user + system time; a thread that spins waiting for the others shows there as cost without
progress. On a loaded machine more threads also win a larger share of the cores from the other
processes, which flatters their wall time: compare CPU seconds.

Run: ``python bench/bench_threads.py [--sentences 24] [--sessions 4]`` (it sets each case's
threads itself).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import table, write_section

MODEL = "paper-en-pt"


def measure(work: str, threads: int, sessions: int, sentences: int) -> dict[str, float]:
    """One case in this process: wall and CPU seconds of ``sessions`` threads of ``work``."""
    import tempfile
    import threading

    import torch

    import viz_transformer as vt
    from viz_transformer.settings import CORPORA_DIR

    torch.set_num_threads(threads)
    lines = (CORPORA_DIR / "english-heldout-1000.txt").read_text().splitlines()
    model = vt.load_model(MODEL, "cpu")
    vt.trace(model, lines[-1])  # warm-up: first-call allocations are not the method's cost

    def session(i: int) -> None:
        mine = lines[i * sentences : (i + 1) * sentences]
        if work == "corpus":
            with tempfile.TemporaryDirectory(prefix="bench-threads-") as out:
                vt.corpus_stats(model, mine, out)
            return
        for text in mine:
            vt.trace(model, text)

    workers = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    cpu, wall = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}


def run_case(work: str, threads: int, sessions: int, sentences: int) -> dict[str, float]:
    """``measure`` in a fresh process whose OpenMP pool has ``threads`` threads."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    args = [sys.executable, __file__, "--case", f"{work},{threads},{sessions},{sentences}"]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=24, help="traced by each session")
    parser.add_argument("--sessions", type=int, default=4, help="at once in the busy case")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # work,threads,sessions,sentences
    args = parser.parse_args()
    if args.case:
        work, *numbers = args.case.split(",")
        print(json.dumps(measure(work, *map(int, numbers))))
        return
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    rows = []
    for work in ("trace", "corpus"):
        for sessions in (1, args.sessions):
            for threads in sorted({1, cores}):
                got = run_case(work, threads, sessions, args.sentences)
                per = 1000 * got["cpu"] / (sessions * args.sentences)
                rows.append([work, sessions, threads, f"{got['wall']:.1f}", f"{got['cpu']:.1f}",
                             f"{per:.0f}"])  # fmt: skip
    body = (
        f"`{MODEL}`, {args.sentences} sentences of the built-in corpus per session, sessions as "
        f"threads of one process; load average {load:.1f} at the start (`trace`: `vt.trace` one "
        "by one, a page view; `corpus`: `vt.corpus_stats`, the corpus page's job).\n\n"
        + table(
            ["work", "sessions at once", "torch threads", "wall s", "CPU s", "CPU ms per sentence"],
            rows,
        )
    )
    write_section("bench_threads", "Torch threads in one server process (issue 35)", body)


if __name__ == "__main__":
    main()
