"""The process's resident set as the memory benchmarks read it (Linux): a ``/proc/self/status``
field, the peak reset to the current set (``/proc/self/clear_refs``; where that cannot be
written, the peak since the start, ``ru_maxrss``), freed heap handed back (``trim``), and one
run measured from there (``above``). Standard library only: a measured child process imports
it before anything it measures."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_RESET = [False]  # whether the last ``reset_peak`` could reset the peak


def status_bytes(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak() -> bool:
    """Reset the peak resident set to the current one (Linux >= 4.0); False where it cannot."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        _RESET[0] = False
    else:
        _RESET[0] = True
    return _RESET[0]


def peak_bytes(reset: bool | None = None) -> int:
    """The peak resident set since the last ``reset_peak`` (since the start where it could not
    reset: ``ru_maxrss``); ``reset`` says whether it could (None: the last call's answer)."""
    if _RESET[0] if reset is None else reset:
        return status_bytes("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def trim() -> None:
    """Collect garbage and hand freed heap back to the system (glibc), so that the next
    measure starts from what is held, not from what was once held."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@dataclass(frozen=True)
class Above:
    """One run's memory and time: its peak resident set minus the set before it (``extra``
    bytes), the set before it (``before``), its ``seconds``, and whether the peak was reset
    (``reset``; else ``extra`` is the process's peak since the start, minus ``before``)."""

    extra: int
    before: int
    seconds: float
    reset: bool


def above(run: Callable[[], T]) -> tuple[Above, T]:
    """``run()`` once from a trimmed heap and a reset peak: what it took, and what it returned."""
    trim()
    reset = reset_peak()
    before = status_bytes("VmRSS")
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    return Above(peak_bytes(reset) - before, before, seconds, reset), result
