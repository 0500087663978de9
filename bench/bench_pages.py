"""Every page that reads the sentence on ``smollm2`` with a long sentence (issue 53), each page
in a process of its own (``bench/harness/page_memory.py``): seconds to open, peak memory above
the loaded model, what it still holds afterwards, and the largest element it sends the browser,
at 3,000 and 8,000 tokens (smollm2's context).

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_pages.py [--pages a,b]``. Targets
(``tests/app/test_page_memory.py`` asserts the memory and size ones): at most 2 GiB above the
model, no update over 1 MB, the walkthrough within 60 CPU seconds at 3,000 tokens (the machine is
shared: its wall time is not the page's); at 8,000 every page
opens within the same memory or refuses before starting.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import REPORT, table, write_section
from bench.harness.page_memory import PAGES, measure

LENGTHS = (3000, 8000)
LIMIT_GIB, LARGEST_MB, WALKTHROUGH_S = 2.0, 1.0, 60.0
REFUSED = "so it was not started"


def _said(row: dict) -> str:
    """``opened``, ``refused: <the job>`` or the first error."""
    refusals = [s for s in row["errors"] + row["notes"] if REFUSED in s]
    if refusals:
        return "refused: " + refusals[0].split(" would take")[0]
    problems = row["exceptions"] + row["errors"]
    return f"error: {problems[0][:80]}" if problems else "opened"


def row_of(row: dict) -> list[object]:
    largest = row["largest_bytes"] / 2**20
    ok = row["extra_gib"] <= LIMIT_GIB and largest <= LARGEST_MB and not row["exceptions"]
    slow = row["page"] == "qkv_walkthrough" and row["tokens"] <= 3000
    ok = ok and not (slow and row["cpu_s"] > WALKTHROUGH_S and "refused" not in _said(row))
    return [
        row["page"],
        f"{row['tokens']:,}",
        f"{row['seconds']:.1f} (CPU {row['cpu_s']:.1f})",
        f"+{row['extra_gib']:.2f}",
        f"+{row['held_gib']:.2f}",
        f"{largest:.2f} ({row['largest_element']})",
        _said(row),
        "pass" if ok else "miss",
    ]


def _kept_rows(measured: list[str]) -> list[list[str]]:
    """The rows of this section in docs/benchmarks.md for pages not in ``measured``."""
    text = REPORT.read_text() if REPORT.exists() else ""
    if "<!-- bench_pages -->" not in text:
        return []
    section = text.split("<!-- bench_pages -->", 1)[1].split("<!-- /bench_pages -->", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return [c for c in cells if c[0] in PAGES and c[0] not in measured]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default=",".join(PAGES), help="comma-separated page stems")
    args = parser.parse_args()
    pages = args.pages.split(",")
    rows = []
    for page in pages:
        start = time.perf_counter()
        found = measure(page, list(LENGTHS))
        whole, load = time.perf_counter() - start, os.getloadavg()[0]
        rows += [[*row_of(r), f"{whole:.0f}", f"{load:.1f}"] for r in found]
        print(rows[-2:], flush=True)
    rows = sorted(rows + _kept_rows(pages), key=lambda r: (PAGES.index(r[0]), r[1]))
    columns = ["page", "tokens", "seconds (CPU s)", "peak GiB above the model", "held after GiB",
               "largest element MB", "what it did", f"<= {LIMIT_GIB:g} GiB, <= 1 MB",
               "process s", "load"]  # fmt: skip
    body = (
        "`smollm2` (float32, CPU) loaded, then each page opened in Streamlit's `AppTest` in a "
        "process of its own: once on the model's example (imports, plotly, first-touched "
        "weights: not counted), then on a text of exactly 3,000 and 8,000 tokens. Peak: the "
        "process's peak resident set (reset through `/proc/self/clear_refs`) minus the "
        "resident set before the page ran; held: what it still held after it (caches "
        "included); largest element: the biggest protobuf message of the page, which one "
        "update carries to the browser (a chart's figure JSON included). A refusal is the "
        "page's message that a job would not fit `VT_JOB_MEMORY_MB` (2,048) before it starts. "
        "Process s: the page's whole process (load, example, both lengths), what one test of "
        "`tests/app/test_page_memory.py` takes; load: the load average when it ended, on 2 "
        "cores shared with other sessions: seconds are indicative only. A page not measured in "
        "this run (`--pages`) keeps its rows of the previous one. No GPU was used.\n\n"
        + table(columns, rows)
    )
    write_section("bench_pages", "Pages at 3,000 and 8,000 tokens: smollm2", body)


if __name__ == "__main__":
    main()
