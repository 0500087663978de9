"""Memory that grows with the input (issue 46): on the CPU stand-in of Llama 3 (the published
128,256-token vocabulary, head size 128, grouped-query heads, RoPE, bfloat16, 2 layers of d_model
512, loaded through ``hf:<folder>`` with ``dtype="bfloat16"``; ``bench.llama.STANDIN_LLAMA``),
each operation in a process of its own (``bench/memory.py``) takes at most 0.5 GiB above the
loaded model at 2,048 tokens, and at most 6x more than at 512 tokens (linear is 4x, quadratic
16x). The full-vocabulary logits alone would take 1 GiB of float32 at 2,048 tokens, a pattern
capture of every layer 134 MB at 2,048 and 8 MB at 512 (16x). ``bench/bench_memory.py`` writes
the same figures, before and after, in docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_memory import FLOOR_GIB, GROWTH, LENGTHS, LIMIT_GIB, growth
from bench.llama import build_llama
from bench.memory import OPERATIONS, measure

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("memory") / "standin", "standin", max(LENGTHS))


@pytest.mark.parametrize("name", OPERATIONS)
def test_extra_memory_is_bounded_and_grows_at_most_linearly(standin: Path, name: str) -> None:
    small, big = measure(standin, name, list(LENGTHS))
    assert (small["tokens"], big["tokens"]) == LENGTHS and big["loaded_gib"] > 0.25  # weights
    assert big["extra_gib"] <= LIMIT_GIB, f"{name}: +{big['extra_gib']:.3f} GiB at 2,048 tokens"
    ratio = growth(small["extra_gib"], big["extra_gib"])
    assert ratio <= GROWTH, (
        f"{name}: {small['extra_gib']:.3f} -> {big['extra_gib']:.3f} GiB is {ratio:.1f}x "
        f"(read against at least {FLOOR_GIB:.3f} GiB)"
    )
