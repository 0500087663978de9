"""A classroom on one server: N browser tabs on a real ``streamlit run app.py``, each its own
session, each typing a different sentence on the Attention maps page at the same time.

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/classroom_load.py [--tabs 10]``. It starts
the app on 127.0.0.1 (a free port; loopback only), opens the tabs in one headless Chromium (a
browser context per tab), waits for every tab's first maps, types a sentence in every tab and
presses Ctrl+Enter in each, then waits for each tab's chart to show a token of its own sentence.
A tab's time runs in the page's own clock from its Enter to its chart, so waiting on the tabs one
after another does not add to it. An error is a traceback in the page, a timeout, or a chart that
shows another tab's sentence. Prints the machine, versions, p50/p95 and errors, then a Markdown
table; ``--json PATH`` also writes the tabs' outcome there (tests/e2e/test_classroom.py runs
the script with 10 tabs and checks that file; bench/tooling/test_in_browser.py checks the checks).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.harness.common import CLASSROOM_MARKERS, add_device_arg, environment, pick_device
from bench.harness.server import serve
from bench.harness.tab_classroom import Classroom, run_classroom, sentences

ROOT = Path(__file__).resolve().parents[1]


def report(room: Classroom, elapsed: float) -> str:
    """Machine, versions and the numbers, then a one-row Markdown table."""
    cpu = platform.processor() or platform.machine()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    p50, p95 = room.percentile(50), room.percentile(95)
    worst = room.percentile(100)
    lines = [
        f"machine: {platform.platform()}, {cpu}, {os.cpu_count()} CPUs, load average {load}",
        f"server: OMP_NUM_THREADS=1; python {platform.python_version()}, streamlit "
        f"{version('streamlit')}, torch {version('torch')}, plotly {version('plotly')}; "
        f"playwright {version('playwright')}, chromium {room.browser}",
        f"tabs: {len(room.tabs)}; first maps in every tab after {room.first_paint:.1f} s",
        f"Enter -> own chart: p50 {p50:.2f} s, p95 {p95:.2f} s, max {worst:.2f} s",
        f"errors: {len(room.errors)}",
        *(f"  {e}" for e in room.errors),
        f"whole run {elapsed:.1f} s",
        "",
        "| tabs | p50 (s) | p95 (s) | max (s) | errors | first maps, all tabs (s) | CPUs |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(room.tabs)} | {p50:.2f} | {p95:.2f} | {worst:.2f} | {len(room.errors)} "
        f"| {room.first_paint:.1f} | {os.cpu_count()} |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=10, help=f"1 to {len(CLASSROOM_MARKERS)}")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for the browser part")
    parser.add_argument("--log", type=Path, default=ROOT / "artifacts" / "classroom-server.log")
    parser.add_argument("--json", type=Path, help="also write the outcome of every tab here")
    add_device_arg(parser)
    args = parser.parse_args()
    os.environ["VT_DEVICE"] = pick_device(args.device)  # the server's models run there
    print(environment(os.environ["VT_DEVICE"]), flush=True)
    sentences(args.tabs)  # refuse a bad --tabs before starting anything
    start = time.monotonic()
    with serve(args.log) as url:
        room = run_classroom(url, args.tabs, args.timeout)
    elapsed = time.monotonic() - start
    print(report(room, elapsed))
    if args.json:
        outcome = {"url": url, "elapsed": elapsed, "errors": room.errors,
                   "p50": room.percentile(50), "p95": room.percentile(95),
                   "tabs": [dataclasses.asdict(t) for t in room.tabs]}  # fmt: skip
        args.json.write_text(json.dumps(outcome))
    sys.exit(1 if room.errors else 0)


if __name__ == "__main__":
    main()
