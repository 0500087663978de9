"""A sliding-window model's long input at tile memory (issue 53): the memory a trace and its first
head map take above the loaded model, each length in a process of its own
(``bench/harness/memory.py``), for the Llama 3 CPU stand-in and the same weights read as Mistral
with a 256-key sliding window.

Run: ``OMP_NUM_THREADS=1 python bench/bench_formula.py``. The stand-in is
``viz_transformer.testing.llama.build_llama(size="standin")`` (2 layers of d_model 512, 4 query
heads per key/value head, bfloat16); the window model is the same folder with its config read as
``MistralForCausalLM`` (``sliding_window`` 256: Mistral's and Llama's weights have the same
names). Before issue 53 a model with a window kept every map whole (``NOT_PLAIN``) and loaded in
float32 only; now its mask stays its predicate and its maps are computed in tiles, so its figures
should be the plain model's: growing with the length, not with its square.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import table, write_section
from bench.harness.memory import measure
from viz_transformer.testing.llama import build_llama

LENGTHS = [1024, 4096]
WINDOW = 256
WHOLE_GIB = "layers x heads x T x T float32 (every map held)"


def as_mistral(folder: Path, window: int) -> Path:
    """``folder``'s Llama read as Mistral with a ``window``-key sliding window, in place."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(model_type="mistral", architectures=["MistralForCausalLM"])
    config.update(sliding_window=window)
    path.write_text(json.dumps(config))
    return folder


def whole_gib(config: dict, n: int) -> float:
    """What every map of ``n`` tokens takes when held (float32)."""
    return config["num_hidden_layers"] * config["num_attention_heads"] * n * n * 4 / 2**30


def main() -> None:
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("Llama (plain)", f"Mistral (window {WINDOW})"):
            folder = build_llama(Path(tmp) / "standin", "standin", positions=max(LENGTHS))
            if label.startswith("Mistral"):
                as_mistral(folder, WINDOW)
            config = json.loads((folder / "config.json").read_text())
            for r in measure(folder, "first map", LENGTHS):
                rows.append([
                    label, r["tokens"], f"+{r['extra_gib']:.3f}", f"{r['seconds']:.2f}",
                    f"{whole_gib(config, r['tokens']):.2f}",
                ])  # fmt: skip
                print(rows[-1], flush=True)
    columns = ["model", "tokens", "trace + first map GiB", "s", f"{WHOLE_GIB} GiB"]
    body = (
        "Each length ran in its own process: its peak resident set minus the resident set after "
        "the load and a warm-up at 32 tokens (`bench/harness/memory.py`), in GiB. The window "
        "model's mask is its predicate (no `T x T` mask) and its heads are computed in tiles; "
        "before issue 53 it kept every map whole (last column) and loaded in float32 only. The "
        f"machine is shared (8 sessions on 2 cores, load {load:.1f} at the start): seconds are "
        "indicative only; no GPU was lent.\n\n" + table(columns, rows)
    )
    write_section("bench_formula", "A sliding-window model's long input at tile memory", body)


if __name__ == "__main__":
    main()
