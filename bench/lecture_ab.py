"""Issue 28's figures, before and after, on the same machine at the same time: the working tree
against an earlier commit (``--before``, checked out in a temporary git worktree), each served by
its own ``streamlit run app.py``. In rounds that alternate between the two, a fresh session opens
Home and the Step-by-step decoder (navigation -> first chart drawn) and clicks Next five times
(click -> next step drawn); presenter mode (1024x768, as a projector) and plain 1366x768.
Alternating keeps a shared machine's load alike for both: compare the two columns.

    OMP_NUM_THREADS=1 python bench/lecture_ab.py --before a35312e --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ``python bench/...``

from playwright.sync_api import sync_playwright

from bench.harness.browser import launch, next_clicks, visit
from bench.harness.common import ROOT, table, write_section
from bench.harness.server import serve


@contextlib.contextmanager
def checkout(rev: str):
    """``rev`` in a temporary git worktree sharing this checkout's virtual environment."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(where), rev], cwd=ROOT,
                       check=True)  # fmt: skip
        try:
            os.symlink(ROOT / ".venv", where / ".venv")
            yield where
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=ROOT,
                           check=False)  # fmt: skip


def measure(browser, url: str, query: str) -> dict[str, list[float]]:
    """One round on one server: first chart of Home and of the decoder, five Next clicks."""
    return {
        "Home, first chart": [visit(browser, f"{url}/{query}", True)],
        "Decoder, first chart": [visit(browser, f"{url}/decoder_steps{query}", False)],
        "Decoder, Next": next_clicks(browser, f"{url}/decoder_steps{query}"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    logs = ROOT / "artifacts"
    rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    rows = []
    with checkout(rev) as old, serve(logs / "ab-before.log", root=old) as before, \
            serve(logs / "ab-after.log") as after, sync_playwright() as p:  # fmt: skip
        browser = launch(p)
        for query, screen in (("?presenter=True", "1024x768 presenter"), ("", "1366x768")):
            times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
            for _ in range(args.rounds):
                for side, url in (("before", before), ("after", after)):
                    for what, secs in measure(browser, url, query).items():
                        times[side].setdefault(what, []).extend(secs)
            for what in times["after"]:
                b, a = times["before"][what], times["after"][what]
                rows.append([screen, what, f"{statistics.median(b):.2f} (max {max(b):.2f})",
                             f"{statistics.median(a):.2f} (max {max(a):.2f})", len(a)])  # fmt: skip
        browser.close()
    load = os.getloadavg()[0]
    body = (
        f"Before: `{rev}` (the commit before issue 28's changes); after: the working tree. "
        f"Seconds, median (max) over {args.rounds} alternating rounds; each first chart is a "
        "fresh session on a warm server (the first round's is the cold one). Issue 28's target: "
        "Next under 1 s warm.\n\n"
        + table(["screen", "what", "before s", "after s", "samples"], rows)
        + f"\n\n1-minute load average at the end: {load:.1f} on {os.cpu_count()} cores.\n"
    )
    write_section("lecture_ab", "Issue 28: first chart and decoder Next, before and after", body)


if __name__ == "__main__":
    main()
