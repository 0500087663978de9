"""How long the test suite or a tier of it takes, and where the time goes (the unit tier: under
20 s on a quiet machine; the whole suite: under 15 minutes on this 2-core machine).

Runs ``pytest PATHS`` (default ``tests/unit``; ``.`` for the whole suite, as the README's
command) once in a subprocess (``OMP_NUM_THREADS=1``, as the README's command) with
``--durations=0`` and prints: pytest's own total (collection included), the CPU seconds the
run used (user + system of the child processes: on one thread, about what a quiet machine's
wall-clock time would be, and much less stretched by a busy machine than the wall clock), the
collection time alone (a second ``--collect-only`` run, its CPU seconds too), the sum of every
test's setup + call + teardown, the files that take longest, the slowest entries, and the load
average before and after, since a shared machine stretches every wall-clock number.

the seconds of each tier (``tests/unit``, ``tests/integration``, ``tests/app``, ``tests/e2e``,
``bench``), and the load average before and after.

Run: ``python bench/tooling/suite_time.py [--top 30] [--paths tests/unit] [-- extra pytest
arguments]``; the whole suite: ``--paths .``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S+)")
TOTAL = re.compile(r" in (\d+\.\d+)s")


def cpu_s() -> float:
    """User + system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest(paths: list[str], *args: str) -> tuple[str, float]:
    """Output of ``python -m pytest PATHS -q -p no:cacheprovider *args`` in the repo, and the
    CPU seconds it used."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", *args]
    before = cpu_s()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True).stdout
    return out, cpu_s() - before


def by_file(entries: list[tuple[float, str, str]]) -> list[tuple[float, str]]:
    """Seconds per test file (setup + call + teardown of its tests), the longest first."""
    files: Counter[str] = Counter()
    for seconds, _, test in entries:
        files[test.split("::")[0]] += seconds
    return [(seconds, name) for name, seconds in files.most_common()]


def by_tier(entries: list[tuple[float, str, str]]) -> list[tuple[float, int, str]]:
    """Seconds and test files per tier (``tests/unit``, ..., ``bench``), the longest first."""
    seconds: Counter[str] = Counter()
    files: dict[str, set[str]] = {}
    for spent, _, test in entries:
        path = test.split("::")[0]
        parts = Path(path).parts
        tier = "/".join(parts[:2]) if parts[0] == "tests" else parts[0]
        seconds[tier] += spent
        files.setdefault(tier, set()).add(path)
    return [(spent, len(files[tier]), tier) for tier, spent in seconds.most_common()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=30, help="slowest entries to print")
    parser.add_argument("--files", type=int, default=15, help="longest files to print")
    parser.add_argument("--paths", nargs="+", default=["tests/unit"], help="what pytest runs")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    before = os.getloadavg()[0]
    out, run_cpu = pytest(args.paths, "--durations=0", "--durations-min=0", *args.extra)
    collect, collect_cpu = pytest(args.paths, "--collect-only", *args.extra)
    after = os.getloadavg()[0]
    entries = [(float(m[1]), m[2], m[3]) for ln in out.splitlines() if (m := LINE.match(ln))]
    entries.sort(reverse=True)
    total = TOTAL.findall(out.splitlines()[-1]) if out.strip() else []
    print(f"load average (1 min): {before:.2f} before, {after:.2f} after; cores: {os.cpu_count()}")
    print(f"pytest total: {total[0] if total else '?'} s; {out.splitlines()[-1].strip()}")
    for line in out.splitlines():  # what failed, from pytest's short summary (``-ra``)
        if line.startswith(("FAILED ", "ERROR ")):
            print(f"  {line}")
    print(f"CPU (user + system): {run_cpu:.1f} s")
    alone = TOTAL.findall(collect)[-1] if TOTAL.findall(collect) else "?"
    print(f"collection alone: {alone} s, CPU {collect_cpu:.1f} s")
    print(f"sum of setup + call + teardown: {sum(e[0] for e in entries):.2f} s")
    for seconds, n_files, tier in by_tier(entries):
        print(f"  {seconds:7.1f} s {tier} ({n_files} files)")
    print("longest files:")
    for seconds, name in by_file(entries)[: args.files]:
        print(f"  {seconds:6.2f} s {name}")
    print("slowest entries:")
    for seconds, phase, test in entries[: args.top]:
        print(f"  {seconds:6.2f} s {phase:8} {test}")


if __name__ == "__main__":
    main()
