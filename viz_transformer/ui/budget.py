"""What a page's long job will take, said before it starts, and the memory handed back after it.

A job's estimate (bytes above the loaded model, ``ui.estimates``) is checked against
``settings.JOB_MEMORY_MB`` and against what the device has free (CUDA: ``torch.cuda.mem_get_info``;
the CPU: the machine's ``MemAvailable``): a job that would not fit raises ``TooLarge``, a
``ValueError`` whose message says what it would take and what to do, before anything is
computed. ``held_bytes`` weighs what a kept record holds (the byte budgets of the trace and
capture caches); ``give_back`` returns freed memory after a long view.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
from pathlib import Path
from typing import Any

import numpy as np
import torch

from viz_transformer import settings
from viz_transformer.models.base import LoadedModel

MB = 2**20


class TooLarge(ValueError):
    """A job refused before it starts, because it would not fit the memory it may take."""


def gb(n: float) -> str:
    """``1.3 GB``: a byte count as people read it."""
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / MB:.0f} MB"


def free_bytes(device: torch.device) -> int | None:
    """What ``device`` has free now: CUDA's free memory, the machine's available memory for the
    CPU (Linux's ``MemAvailable``); None where it cannot be read."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type != "cpu":
        return None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def room(device: torch.device) -> tuple[int, str]:
    """The bytes one job may take now, and what sets that figure (the setting or the device)."""
    limit = settings.JOB_MEMORY_MB * MB
    free = free_bytes(device)
    if free is not None and free < limit:
        return free, f"what {device.type} memory is free now"
    return limit, f"the server's limit per job, VT_JOB_MEMORY_MB={settings.JOB_MEMORY_MB}"


def require(what: str, need: int, device: torch.device, advice: str) -> None:
    """Raise ``TooLarge`` when ``need`` bytes would not fit ``room(device)``.

    Args:
        what: the job, as the message names it ("The Q, K, V walkthrough of 3,000 tokens").
        need: its estimate in bytes above the loaded model.
        advice: what the user can do instead (a shorter text, another page).
    """
    limit, why = room(device)
    if need > limit:
        raise TooLarge(
            f"{what} would take about {gb(need)} of memory, more than {gb(limit)} ({why}), "
            f"so it was not started. {advice}"
        )


def held_bytes(obj: Any, _seen: set[int] | None = None) -> int:
    """The bytes of the arrays and tensors ``obj`` holds: numpy arrays (a view counted through
    its base), tensors (their storage, each once), through dictionaries, sequences, dataclasses
    and this package's own objects; never into a model, a module or a function (a lazy trace's
    fetch, which holds the model)."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not obj and id(base) in seen:
            return 0
        seen.add(id(base))
        return base.nbytes
    if isinstance(obj, torch.Tensor):
        storage = obj.untyped_storage()
        key = -storage.data_ptr() - 1  # kept apart from the objects' ids in ``seen``
        if key in seen:
            return 0
        seen.add(key)
        return storage.nbytes()
    if isinstance(obj, (torch.nn.Module, LoadedModel)):
        return 0
    if isinstance(obj, dict):
        return sum(held_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sum(held_bytes(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj) or type(obj).__module__.startswith("viz_transformer"):
        if hasattr(obj, "__dict__"):
            return sum(held_bytes(v, seen) for v in vars(obj).values())
        if dataclasses.is_dataclass(obj):  # slots
            return sum(held_bytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return 0


def give_back() -> None:
    """Hand memory back after a long view: collect garbage, empty CUDA's cache of freed blocks
    and ask the C heap to return its free pages to the system (glibc's ``malloc_trim``)."""
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)
