"""Memory above the loaded model (issue 46) on the CPU stand-in of Llama 3, each operation in a
process of its own (``bench/harness/memory.py``), at 512 and 2,048 tokens.

Run: ``OMP_NUM_THREADS=1 python bench/bench_memory.py [--before <checkout>]``. The stand-in is
``viz_transformer.testing.llama.build_llama(size="standin")``: Llama 3's published 128,256-token
vocabulary, head size 128, 4 query heads per key/value head, RoPE, bfloat16, 2 layers of
d_model 512, loaded through ``hf:<folder>`` with ``dtype="bfloat16"``. ``--before`` measures the
same operations with the package of another checkout (``git archive <commit> | tar -x -C
<folder>``) for the before/after table. Targets (``tests/integration/test_memory.py`` asserts
them): at most 0.5 GiB above the loaded model at 2,048 tokens, at most 6x more from 512 to 2,048.
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
from bench.harness.memory import OPERATIONS, ROOT, measure
from viz_transformer.testing.llama import build_llama

LENGTHS = (512, 2048)
LIMIT_GIB, GROWTH = 0.5, 6.0
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_llama(Path(tmp) / "standin", "standin", positions=max(LENGTHS))
        rows = rows_of(folder, args.before, "before") if args.before else []
        rows += rows_of(folder, ROOT, "now")
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
        "(full-vocabulary logits and a float32 copy per row, a walkthrough capture of every "
        "pattern for the split and the writes); `now`: this checkout. The machine is shared "
        "(8 sessions on 2 cores): seconds are indicative only. No GPU was lent while this was "
        "built: these CPU figures are the evidence for the memory targets.\n\n"
        + table(columns, rows)
    )
    write_section("bench_memory", "Memory above the loaded model: the Llama 3 stand-in", body)


if __name__ == "__main__":
    main()
