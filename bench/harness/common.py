"""What every benchmark script shares: the environment it ran in, timing, and the report.

Each script prints its table and rewrites its own section of ``docs/benchmarks.md`` (between
``<!-- name -->`` markers), so rerunning one benchmark leaves the others' results in place.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "docs" / "benchmarks.md"
PACKAGES = ("torch", "transformers", "streamlit", "plotly", "numpy")
HEADER = """# Benchmarks

Every number here comes from a script under `bench/`; rerun one with
`OMP_NUM_THREADS=1 .venv/bin/python bench/<script>.py` and it rewrites its own section. The machine
is shared and noisy: compare the ratios measured in one run, take absolute times as context.
"""


# one marker word per session or tab: each a single token of paper-en-pt's English vocabulary
# (checked when the list was made: a whole word of the source tokens of its template sentence), none
# a word the page's charts show for every sentence ("table" was: every session saw it)
CLASSROOM_MARKERS = (
    "kitchen", "garden", "window", "doctor", "teacher", "bicycle", "river", "mountain", "letter",
    "pencil", "winter", "summer", "orange", "coffee", "breakfast", "library", "hospital",
    "airport", "village", "forest", "island", "bridge", "castle", "market", "painter", "student",
    "blanket", "ticket", "jacket", "sister", "brother", "camera", "dinner", "horse", "apple",
    "bottle", "chair", "flower", "engine", "hammer", "kettle", "lemon", "mirror",
    "needle", "ocean", "pillow", "rabbit", "sugar", "violin", "wallet", "basket", "candle",
    "carpet", "cousin", "desert", "finger", "guitar", "honey", "lawyer", "museum", "nurse",
    "pocket", "prince", "shadow", "station", "tunnel", "uncle", "valley", "wheel",
)  # fmt: skip
CLASSROOM_TEMPLATES = (
    "My friend found the {} near the old house.",
    "We talked about the {} all evening.",
    "Nobody wanted to see the {} again today.",
    "Yesterday the {} was much bigger than I remembered.",
)


def classroom_sentences(n: int, flag: str) -> list[tuple[str, str]]:
    """``n`` different English sentences as (marker word, sentence), one per simulated student
    (``classroom_load``'s tabs, ``classroom_ws``'s sessions; ``flag`` names the option)."""
    if not 1 <= n <= len(CLASSROOM_MARKERS):
        most = len(CLASSROOM_MARKERS)
        raise ValueError(f"{flag} must be between 1 and {most} (one marker word each).")
    return [(m, CLASSROOM_TEMPLATES[i % len(CLASSROOM_TEMPLATES)].format(m))
            for i, m in enumerate(CLASSROOM_MARKERS[:n])]  # fmt: skip


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: str = "cpu") -> str:
    """One line: machine, cores, torch threads, device, Python and package versions."""
    import torch

    versions = []
    for name in PACKAGES:
        with contextlib.suppress(PackageNotFoundError):
            versions.append(f"{name} {version(name)}")
    gpu = f" ({torch.cuda.get_device_name()})" if device.startswith("cuda") else ""
    return (
        f"{cpu_name()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()} "
        f"(OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}), device {device}{gpu}, "
        f"Python {sys.version.split()[0]}, " + ", ".join(versions)
    )


def add_device_arg(parser: argparse.ArgumentParser) -> None:
    """``--device`` as every benchmark takes it (the default: ``VT_DEVICE``, else the machine's)."""
    parser.add_argument(
        "--device",
        default=None,
        help="cpu, cuda, cuda:1, mps (default: VT_DEVICE, else cuda when present, else cpu)",
    )


def pick_device(arg: str | None = None) -> str:
    """``arg`` if given, else the library's default (``VT_DEVICE``, else ``cuda`` when present,
    else ``mps``, else ``cpu``), checked against this machine.

    Exits with the library's message when the device is missing (``--device cuda`` on a machine
    without CUDA, a misspelt ``VT_DEVICE``).
    """
    from viz_transformer.models.devices import check_device, default_device

    try:
        return str(check_device(arg, f"--device {arg}") if arg else default_device())
    except ValueError as exc:
        raise SystemExit(f"{Path(sys.argv[0]).name}: {exc}") from None


def sync(device: str) -> None:
    """Wait for queued GPU work so wall times are honest."""
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in milliseconds after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def replace_marked(text: str, name: str, section: str, heading: str = "") -> str:
    """``text`` with its part from ``<!-- name -->`` to ``<!-- /name -->`` replaced by
    ``section`` (which carries the markers itself); where ``text`` lacks them, ``section`` is
    appended, under ``heading`` when one is given."""
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        return before + section + rest.split(end, 1)[1]
    return text.rstrip() + "\n\n" + (f"{heading}\n\n" if heading else "") + section + "\n"


def write_section(
    name: str,
    title: str,
    body: str,
    device: str = "cpu",
    script: str | None = None,
    write: bool = True,
) -> None:
    """Replace (or append) section ``name`` of ``docs/benchmarks.md`` and print it; with
    ``write`` False (a script's ``--no-write``), print ``body`` alone and leave the file.

    The section records the command (``bench/<script or name>.py`` and its arguments), the date
    and ``environment()`` above ``body``.
    """
    if not write:
        print(body)
        return
    command = "OMP_NUM_THREADS={} python {}".format(
        os.environ.get("OMP_NUM_THREADS", "unset"),
        " ".join([f"bench/{script or name}.py", *sys.argv[1:]]),
    )
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = (
        f"<!-- {name} -->\n## {title}\n\n`{command}`, {stamp}\\\n{environment(device)}\n\n"
        f"{body.strip()}\n<!-- /{name} -->"
    )
    print(section)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    text = REPORT.read_text() if REPORT.exists() else HEADER
    REPORT.write_text(replace_marked(text, name, section))


def verdict(value: float, limit: float) -> str:
    """``pass`` when ``value <= limit``, else ``miss``."""
    return "pass" if value <= limit else "miss"
