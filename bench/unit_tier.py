"""How long the unit tier takes, and where the time goes (issue 32: under 15 s on a quiet machine).

Runs ``pytest tests/unit`` once in a subprocess (``OMP_NUM_THREADS=1``, as the README's command)
with ``--durations=0`` and prints: pytest's own total (collection included), the collection time
alone (a second ``--collect-only`` run), the sum of every test's setup + call + teardown, the
slowest entries, and the load average before and after, since a shared machine stretches every
number (compare runs only at a similar load).

Run: ``python bench/unit_tier.py [--top 30] [-- extra pytest arguments]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S+)")
TOTAL = re.compile(r" in (\d+\.\d+)s")


def pytest(*args: str) -> str:
    """Output of ``python -m pytest tests/unit -q -p no:cacheprovider *args`` in the repo."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "tests/unit", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True).stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=30, help="slowest entries to print")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    out = pytest("--durations=0", "--durations-min=0", *args.extra)
    collect = pytest("--collect-only", *args.extra)
    after = os.getloadavg()[0]
    entries = [(float(m[1]), m[2], m[3]) for ln in out.splitlines() if (m := LINE.match(ln))]
    entries.sort(reverse=True)
    total = TOTAL.findall(out.splitlines()[-1]) if out.strip() else []
    print(f"load average (1 min): {before:.2f} before, {after:.2f} after; cores: {os.cpu_count()}")
    print(f"pytest total: {total[0] if total else '?'} s; {out.splitlines()[-1].strip()}")
    print(f"collection alone: {TOTAL.findall(collect)[-1] if TOTAL.findall(collect) else '?'} s")
    print(f"sum of setup + call + teardown: {sum(e[0] for e in entries):.2f} s")
    for seconds, phase, test in entries[: args.top]:
        print(f"  {seconds:6.2f} s {phase:8} {test}")


if __name__ == "__main__":
    main()
