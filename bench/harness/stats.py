"""What the benchmarks compute from their measurements: the nearest-rank percentile (of any
order of times) and the peak memory of a run."""

from __future__ import annotations

import math
import resource
from collections.abc import Iterable

import torch


def percentile(times: Iterable[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0-100] of ``times`` in any order; ``inf`` for no times."""
    ordered = sorted(times)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)] if ordered else math.inf


def peak_gib(device: str) -> float:
    """The run's peak memory in GiB: PyTorch's allocations on a CUDA ``device``, else the
    process's peak resident set."""
    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def peak(device: str) -> str:
    """``peak_gib`` as a table cell: "1.23 GiB (GPU)" or "0.45 GiB (RSS)"."""
    where = "GPU" if device.startswith("cuda") else "RSS"
    return f"{peak_gib(device):.2f} GiB ({where})"
