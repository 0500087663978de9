"""The memory one operation takes above the loaded model, each in a process of its own (issue 46).

``measure(folder, operation, lengths)`` starts ``python bench/harness/memory.py <folder> <operation>
<n>...``, which loads ``hf:<folder>`` in bfloat16 on the CPU and runs the operation once at 32
tokens (so that imports, first-touched weights and kernels' one-off buffers are not counted);
then, for each length, frees what it can (``gc``, ``malloc_trim``), resets the process's peak
resident set (``/proc/self/clear_refs``; where that cannot be written, the peak since the start,
``ru_maxrss``), runs ``operation`` at ``n`` tokens and prints its peak minus the resident set
before it, in GiB, and its seconds, as JSON.

Before the first measure every weight is read once (``page_in``): a model loaded from
safetensors is mapped, and a page first touched during a measure (an embedding row of a token the
warm-up did not read) would count as the operation's memory.

Operations, as the app and the library run them (the last layer's head 1, the last query on key
1): ``first map`` (trace + the first head map's figure JSON), ``overview`` (trace + the overview
of every head), ``split`` (``vt.score_parts`` by dimension), ``writes`` (``vt.head_writes``),
``walkthrough`` (``walkthrough.walkthrough``: the Q, K, V walkthrough's capture and its steps).

``per_layer(folders, operation, n)`` measures one operation on stand-ins that differ only in
their number of layers (issue 53): what each added layer adds, against what a layer keeps of q
and k (``qk_bytes``). It measures with large buffers mapped (``ALLOCATORS``): glibc's heap, as it
comes, leaves holes among a pass's buffers whose size changes from run to run (two runs of the
same trace: +151 and +191 MiB over 6 layers) and would drown a layer's 20 MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OPERATIONS = ("first map", "overview", "split", "writes", "walkthrough")
# the C heap of a measured process: glibc as it comes, or with every buffer of 4 MiB or more in a
# mapping of its own ("mapped"), so that a peak counts what the operation holds, not where the
# heap's holes fell: glibc's default moved a pass's peak by +-80 MiB from run to run at 4,096
# tokens (width 2,048), more than a layer's queries and keys (20 MiB)
ALLOCATORS = {"glibc": {}, "mapped": {"MALLOC_MMAP_THRESHOLD_": str(4 << 20)}}
ROOT = Path(__file__).resolve().parents[2]


def operation(model: Any, name: str, n: int) -> Callable[[], Any]:
    """``name`` (``OPERATIONS``) at ``n`` tokens on ``model``, ready to run."""
    import viz_transformer as vt
    from bench.harness.models import text_of
    from viz_transformer.analysis.walkthrough import walkthrough
    from viz_transformer.figures.attention import head_figure, overview_figure

    text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n)
    layer = model.facts.layers["decoder"] - 1
    steps = {
        "first map": lambda: head_figure(model.trace(text), "decoder", 0, 0).to_json(),
        "overview": lambda: overview_figure(model.trace(text), "decoder").to_json(),
        "split": lambda: vt.score_parts(model, text, "decoder", layer, 1, n - 1, 1),
        "writes": lambda: vt.head_writes(model, text, "decoder", layer, 1, n - 1),
        "walkthrough": lambda: walkthrough(model, text, "decoder", layer, 1, n - 1),
    }
    return steps[name]


def page_in(module: Any) -> float:
    """Read every weight once (a value per 4 KiB page), so that what the model maps from its
    files is resident before the baseline; returns their sum (unused)."""
    import torch

    total = 0.0
    with torch.no_grad():
        for p in module.parameters():
            flat = p.detach().reshape(-1)
            total += float(flat[:: max(1, 4096 // flat.element_size())].float().sum())
    return total


def qk_bytes(config: Any, n: int, itemsize: int = 2) -> int:
    """What one layer keeps of q and k at ``n`` tokens: every query head's and key/value head's
    ``n x d_k`` values, in the model's dtype (``itemsize`` bytes)."""
    heads = config.num_attention_heads
    d_k = getattr(config, "head_dim", None) or config.hidden_size // heads
    return n * (heads + (getattr(config, "num_key_value_heads", None) or heads)) * d_k * itemsize


def child(folder: str, name: str, lengths: list[int]) -> list[dict[str, Any]]:
    """In this process: load, read every weight, warm up, then ``name`` at each length (see the
    module doc)."""
    import torch

    import viz_transformer as vt
    from bench.harness.rss import above

    model = vt.load_model(f"hf:{folder}", "cpu", "bfloat16")
    page_in(model.module)
    operation(model, name, 32)()  # imports, kernels' one-off buffers
    out = []
    for n in lengths:
        run = operation(model, name, n)
        with torch.no_grad():
            took, _ = above(run)
        out.append({"operation": name, "tokens": n, "extra_gib": took.extra / 2**30,
                    "loaded_gib": took.before / 2**30, "seconds": took.seconds,
                    "peak_reset": took.reset, "layers": model.facts.layers["decoder"],
                    "qk_bytes": qk_bytes(model.module.config, n)})  # fmt: skip
        del run
    return out


def measure(
    folder: Path | str,
    name: str,
    lengths: list[int],
    root: Path = ROOT,
    python: str = sys.executable,
    allocator: str = "glibc",
) -> list[dict[str, Any]]:
    """``child`` in a fresh process importing the package at ``root`` (another checkout: the
    same measure before a change), its C heap as ``ALLOCATORS[allocator]`` sets it."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(root)}
    env.update(ALLOCATORS[allocator])
    env.setdefault("VT_MAX_CHARS", "1000000")
    cmd = [python, str(Path(__file__).resolve()), str(folder), name, *map(str, lengths)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, check=False)
    if done.returncode:
        raise RuntimeError(f"{name} at {lengths} tokens failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_layer(
    folders: dict[int, Path], name: str, n: int, root: Path = ROOT, allocator: str = "mapped"
) -> dict[str, Any]:
    """``name`` at ``n`` tokens on each stand-in of ``folders`` (layers -> folder, two of them),
    each in a process of its own (``measure``, with ``allocator``): the extra memory of each, and
    what each added layer adds.

    Returns:
        ``{"operation", "tokens", "runs": [measure rows], "per_layer_mib", "qk_mib", "ratio"}``:
        ratio is the added memory per layer over what a layer keeps of q and k.
    """
    runs = [measure(folders[i], name, [n], root, allocator=allocator)[0] for i in sorted(folders)]
    (few, many) = runs[0], runs[-1]
    added = (many["extra_gib"] - few["extra_gib"]) * 1024 / (many["layers"] - few["layers"])
    qk = many["qk_bytes"] / 2**20
    return {
        "operation": name,
        "tokens": n,
        "runs": runs,
        "per_layer_mib": added,
        "qk_mib": qk,
        "ratio": added / qk,
    }


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", str(ROOT)).split(os.pathsep)[0])
    print(json.dumps(child(sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3:]])))
