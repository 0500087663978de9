"""Memory above the loaded model, each operation in a process of its own
(``bench/harness/memory.py``): on the CPU stand-in of Llama 3 at 512 and 2,048 tokens (issue
46), and per layer on stand-ins of a real width at 2 and 8 layers, 4,096 tokens (issue 53).

Run: ``OMP_NUM_THREADS=1 python bench/bench_memory.py [--before <checkout>]``. The stand-in is
``viz_transformer.testing.llama.build_llama(size="standin")``: Llama 3's published 128,256-token
vocabulary, head size 128, 4 query heads per key/value head, RoPE, bfloat16, 2 layers of
d_model 512, loaded through ``hf:<folder>`` with ``dtype="bfloat16"``. The wide stand-ins are
``build_llama(size="wide", layers=2 or 8)``: d_model 2,048, 16 query heads of 128 sharing 4
key/value heads, bfloat16. ``--before`` measures the same operations with the package of another
checkout (``git archive <commit> | tar -x -C <folder>``) for the before/after tables (its
walkthrough per layer at 1,024 tokens: every layer's patterns took 1 GiB a layer at 4,096).
Targets (``tests/integration/test_memory.py`` asserts them): at most 0.5 GiB above the loaded
model at 2,048 tokens, at most 6x more from 512 to 2,048; each added layer at most 1.25x what a
layer keeps of q and k (large buffers mapped: ``harness.memory.ALLOCATORS``; glibc's heap as it
comes is shown beside, once).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import table, verdict, write_section
from bench.harness.memory import OPERATIONS, ROOT, measure, per_layer
from viz_transformer.testing.llama import build_llama

LENGTHS = (512, 2048)
LIMIT_GIB, GROWTH = 0.5, 6.0
PER_LAYER_OPS = ("first map", "split", "writes", "walkthrough")
WIDE_LAYERS, WIDE_TOKENS, PER_LAYER = (2, 8), 4096, 1.25
BEFORE_WALKTHROUGH = 1024  # tokens: the walkthrough before issue 53 kept every layer's patterns
FLOOR_GIB = 1 / 64  # growth is read against at least 16 MiB: below it the ratio is noise


def growth(small: float, big: float) -> float:
    return big / max(small, FLOOR_GIB)


def rows_of(folder: Path, root: Path, label: str) -> list[list[object]]:
    rows = []
    for name in OPERATIONS:
        small, big = measure(folder, name, list(LENGTHS), root)
        ratio = growth(small["extra_gib"], big["extra_gib"])
        rows.append([
            label, name, f"+{small['extra_gib']:.3f}", f"+{big['extra_gib']:.3f}",
            f"{ratio:.1f}x", f"{small['seconds']:.2f}", f"{big['seconds']:.2f}",
            verdict(max(big["extra_gib"] / LIMIT_GIB, ratio / GROWTH), 1.0),
        ])  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def layer_rows(folders: dict[int, Path], root: Path, label: str) -> list[list[object]]:
    """Per layer: each operation on the 2- and the 8-layer stand-in, large buffers mapped; for
    this checkout also with glibc's heap as it comes."""
    rows = []
    for name in PER_LAYER_OPS:
        n = BEFORE_WALKTHROUGH if label == "before" and name == "walkthrough" else WIDE_TOKENS
        for allocator in ("mapped", "glibc") if label == "now" else ("mapped",):
            got = per_layer(folders, name, n, root, allocator)
            few, many = (r["extra_gib"] * 1024 for r in got["runs"])
            rows.append([
                label, name, f"{n:,}", allocator, f"+{few:.0f}", f"+{many:.0f}",
                f"{got['per_layer_mib']:+.1f}", f"{got['qk_mib']:.0f}", f"{got['ratio']:.2f}x",
                verdict(got["ratio"], PER_LAYER),
            ])  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def layer_section(rows: list[list[object]]) -> str:
    columns = ["code", "operation", "tokens", "heap", "2 layers MiB", "8 layers MiB",
               "per layer MiB", "a layer's q + k MiB", "ratio", f"<= {PER_LAYER}x"]  # fmt: skip
    return (
        "\n\n### Per layer: the wide stand-ins\n\n"
        "`viz_transformer.testing.llama.WIDE_LLAMA` (d_model 2,048, 16 query heads of 128 "
        "sharing 4 key/value heads, RoPE, bfloat16, MLP 2,048, 32,000-token vocabulary) at 2 "
        "and 8 layers, loaded through `hf:<folder>`, every weight read once before the "
        "baseline. Each figure is a process's peak above its resident set after the load "
        "(MiB); per layer is the 8-layer figure less the 2-layer one over 6, against what a "
        "layer keeps of q and k in bfloat16 (16 + 4 heads x n x 128). `mapped`: every buffer "
        "of 4 MiB or more in a mapping of its own (`MALLOC_MMAP_THRESHOLD_`), what the test "
        "asserts; `glibc`: the heap as it comes, whose holes moved a trace's peak by tens of "
        "MiB from run to run (one run shown). First map: the trace + the first head's figure; "
        "split: `vt.score_parts` by dimension; writes: `vt.head_writes`; walkthrough: "
        "`walkthrough.walkthrough` (its capture and every step), each at the last layer.\n\n"
        + table(columns, rows)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_llama(Path(tmp) / "standin", "standin", positions=max(LENGTHS))
        rows = rows_of(folder, args.before, "before") if args.before else []
        rows += rows_of(folder, ROOT, "now")
        wide = {
            n: build_llama(Path(tmp) / f"w{n}", "wide", WIDE_TOKENS, layers=n) for n in WIDE_LAYERS
        }
        per = layer_rows(wide, args.before, "before") if args.before else []
        per += layer_rows(wide, ROOT, "now")
    columns = ["code", "operation", "512 tokens GiB", "2,048 tokens GiB", "growth",
               "512 tokens s", "2,048 tokens s", f"<= {LIMIT_GIB} GiB, <= {GROWTH:g}x"]  # fmt: skip
    loaded = "the resident set after the load and a warm-up at 32 tokens"
    body = (
        "The CPU stand-in of Llama 3 (`viz_transformer.testing.llama.STANDIN_LLAMA`: the "
        "published 128,256-token vocabulary, head size 128, 4 query heads per key/value head, "
        "RoPE theta 500,000, bfloat16; 2 layers of d_model 512, 138 M parameters) loaded "
        "through `hf:<folder>` with "
        f'`dtype="bfloat16"`. Each operation ran in its own process; figures are its peak '
        f"resident set minus {loaded} (the peak reset through `/proc/self/clear_refs`), in GiB. "
        "Growth is the 2,048-token figure over the 512-token one (linear: 4x, quadratic: 16x; "
        f"read against at least {FLOOR_GIB * 1024:.0f} MiB). `before`: the checkout given "
        "(`--before`); `now`: this checkout. The machine is shared "
        "(8 sessions on 2 cores): seconds are indicative only. No GPU was lent while this was "
        "built: these CPU figures are the evidence for the memory targets.\n\n"
        + table(columns, rows)
        + layer_section(per)
    )
    write_section("bench_memory", "Memory above the loaded model: the Llama 3 stand-in", body)


if __name__ == "__main__":
    main()
