"""Memory that grows with the input (issue 46): on the CPU stand-in of Llama 3 (the published
128,256-token vocabulary, head size 128, grouped-query heads, RoPE, bfloat16, 2 layers of d_model
512, loaded through ``hf:<folder>`` with ``dtype="bfloat16"``; ``testing.llama.STANDIN_LLAMA``),
each operation in a process of its own (``bench/harness/memory.py``) takes at most 0.5 GiB above the
loaded model at 2,048 tokens, and at most 6x more than at 512 tokens (linear is 4x, quadratic
16x). The full-vocabulary logits alone would take 1 GiB of float32 at 2,048 tokens, a pattern
capture of every layer 134 MB at 2,048 and 8 MB at 512 (16x).

Per layer (issue 53), on stand-ins of a real width (``WIDE_LLAMA``: d_model 2,048, 16 query
heads of 128 sharing 4 key/value heads, bfloat16) of 2 and 8 layers at 4,096 tokens: each added
layer adds at most 1.25x what a layer keeps of q and k (20 MiB) to the trace and its first map, a
score split, a head's writes and the Q, K, V walkthrough (every layer's patterns, hidden states or
weights in float32 would each cost more than that). These run with large buffers mapped
(``MALLOC_MMAP_THRESHOLD_``, ``bench/harness/memory.py``'s ``ALLOCATORS``): glibc's heap as it
comes moves a pass's peak by tens of MiB from run to run. ``bench/bench_memory.py`` writes the
same figures, before and after, in docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from viz_transformer.testing.llama import build_llama

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ("first map", "overview", "split", "writes", "walkthrough")  # harness/memory.py's
LENGTHS = (512, 2048)
LIMIT_GIB, GROWTH = 0.5, 6.0  # issue 46
FLOOR_GIB = 1 / 64  # growth is read against at least 16 MiB: below it the ratio is noise
PER_LAYER_OPS = ("first map", "split", "writes", "walkthrough")  # issue 53
WIDE_LAYERS, WIDE_TOKENS, PER_LAYER = (2, 8), 4096, 1.25
MAPPED = {"MALLOC_MMAP_THRESHOLD_": str(4 << 20)}  # bench/harness/memory.py's ALLOCATORS["mapped"]


def _measure(
    folder: Path, name: str, lengths: tuple[int, ...] = LENGTHS, env: dict | None = None
) -> list[dict]:
    """``bench/harness/memory.py`` (the benchmark's harness, run as a script) in a fresh process."""
    base = {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    env = {**os.environ, **base, "VT_MAX_CHARS": "1000000", **(env or {})}
    cmd = [sys.executable, str(ROOT / "bench" / "harness" / "memory.py"), str(folder), name,
           *map(str, lengths)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("memory") / "standin", "standin", max(LENGTHS))


@pytest.mark.parametrize("name", OPERATIONS)
def test_extra_memory_is_bounded_and_grows_at_most_linearly(standin: Path, name: str) -> None:
    small, big = _measure(standin, name)
    assert (small["tokens"], big["tokens"]) == LENGTHS and big["loaded_gib"] > 0.25  # weights
    assert big["extra_gib"] <= LIMIT_GIB, f"{name}: +{big['extra_gib']:.3f} GiB at 2,048 tokens"
    ratio = big["extra_gib"] / max(small["extra_gib"], FLOOR_GIB)
    assert ratio <= GROWTH, (
        f"{name}: {small['extra_gib']:.3f} -> {big['extra_gib']:.3f} GiB is {ratio:.1f}x "
        f"(read against at least {FLOOR_GIB:.3f} GiB)"
    )


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("per-layer")
    return {n: build_llama(root / f"wide-{n}", "wide", WIDE_TOKENS, layers=n) for n in WIDE_LAYERS}


@pytest.mark.parametrize("name", PER_LAYER_OPS)
def test_each_added_layer_adds_at_most_its_queries_and_keys(wide: dict[int, Path], name: str):
    few, many = (_measure(wide[n], name, (WIDE_TOKENS,), MAPPED)[0] for n in WIDE_LAYERS)
    assert (few["layers"], many["layers"]) == WIDE_LAYERS
    per_layer = (many["extra_gib"] - few["extra_gib"]) * 2**30 / (WIDE_LAYERS[1] - WIDE_LAYERS[0])
    qk = many["qk_bytes"]  # 16 query and 4 key heads x 4,096 x 128 in bfloat16: 20 MiB
    assert qk == 20 * 2**20
    assert per_layer <= PER_LAYER * qk, (
        f"{name}: each added layer adds {per_layer / 2**20:.1f} MiB, "
        f"{per_layer / qk:.2f}x its queries and keys ({qk / 2**20:.0f} MiB)"
    )
