"""The memory one operation takes above the loaded model, each in a process of its own (issue 46).

``measure(folder, operation, lengths)`` starts ``python bench/harness/memory.py <folder> <operation>
<n>...``, which loads ``hf:<folder>`` in bfloat16 on the CPU and runs the operation once at 32
tokens (so that imports, first-touched weights and kernels' one-off buffers are not counted);
then, for each length, frees what it can (``gc``, ``malloc_trim``), resets the process's peak
resident set (``/proc/self/clear_refs``; where that cannot be written, the peak since the start,
``ru_maxrss``), runs ``operation`` at ``n`` tokens and prints its peak minus the resident set
before it, in GiB, and its seconds, as JSON.

Operations, as the app and the library run them (the last layer's head 1, the last query on key
1): ``first map`` (trace + the first head map's figure JSON), ``overview`` (trace + the overview
of every head), ``split`` (``vt.score_parts`` by dimension), ``writes`` (``vt.head_writes``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OPERATIONS = ("first map", "overview", "split", "writes")
ROOT = Path(__file__).resolve().parents[2]
_RESET = [False]  # whether the last ``reset_peak`` could reset the peak


def _status(field: str) -> int:
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
    reset: ``ru_maxrss``)."""
    if _RESET[0] if reset is None else reset:
        return _status("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def operation(model: Any, name: str, n: int) -> Callable[[], Any]:
    """``name`` (``OPERATIONS``) at ``n`` tokens on ``model``, ready to run."""
    import viz_transformer as vt
    from bench.harness.models import text_of
    from viz_transformer.figures.attention import head_figure, overview_figure

    text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n)
    layer = model.facts.layers["decoder"] - 1
    steps = {
        "first map": lambda: head_figure(model.trace(text), "decoder", 0, 0).to_json(),
        "overview": lambda: overview_figure(model.trace(text), "decoder").to_json(),
        "split": lambda: vt.score_parts(model, text, "decoder", layer, 1, n - 1, 1),
        "writes": lambda: vt.head_writes(model, text, "decoder", layer, 1, n - 1),
    }
    return steps[name]


def _trim() -> None:
    """Collect garbage and hand freed heap back to the system (glibc), so that the next
    measure starts from what is held, not from what was once held."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def child(folder: str, name: str, lengths: list[int]) -> list[dict[str, Any]]:
    """In this process: load, warm up, then ``name`` at each length (see the module doc)."""
    import torch

    import viz_transformer as vt

    model = vt.load_model(f"hf:{folder}", "cpu", "bfloat16")
    operation(model, name, 32)()  # imports, first-touched weights
    out = []
    for n in lengths:
        run = operation(model, name, n)
        _trim()
        reset = reset_peak()
        before = _status("VmRSS")
        start = time.perf_counter()
        with torch.no_grad():
            run()
        seconds = time.perf_counter() - start
        extra = peak_bytes(reset) - before
        out.append({"operation": name, "tokens": n, "extra_gib": extra / 2**30,
                    "loaded_gib": before / 2**30, "seconds": seconds,
                    "peak_reset": reset})  # fmt: skip
        del run
    return out


def measure(
    folder: Path | str,
    name: str,
    lengths: list[int],
    root: Path = ROOT,
    python: str = sys.executable,
) -> list[dict[str, Any]]:
    """``child`` in a fresh process importing the package at ``root`` (another checkout: the
    same measure before a change)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root)}
    env.setdefault("VT_MAX_CHARS", "1000000")
    cmd = [python, str(Path(__file__).resolve()), str(folder), name, *map(str, lengths)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, check=False)
    if done.returncode:
        raise RuntimeError(f"{name} at {lengths} tokens failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)).split(os.pathsep)[0])
    print(json.dumps(child(sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3:]])))
