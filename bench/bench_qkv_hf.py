"""Q/K/V walkthrough of Hugging Face models: time of ``walkthrough.capture`` of the last layer as
the page asks it (``walkthrough.reads``: one pass keeping that layer's input, norm, q, k and z)
plus one head explained, beside a plain
``vt.trace`` of the same text, for the shipped ``minilm`` (BERT family), a GPT-2 the size of
``gpt2`` (random weights, built offline) and, with ``--smollm2``, the built-in Llama-family LLM.

Run: ``OMP_NUM_THREADS=1 python bench/bench_qkv_hf.py [--runs 5] [--smollm2] [--device cpu]``.
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

TEXT = "The cat sat on the mat because it was warm and the dog was outside in the rain."


def _gpt2_base(folder: Path) -> Path:
    """GPT-2 base's shape (12 layers, 12 heads, d 768, 1,024 positions), random weights, with the
    tiny test model's byte-level tokenizer."""
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

    from viz_transformer.testing.hf import BUILDERS

    tiny = BUILDERS["gpt2"](folder)
    tok = GPT2Tokenizer.from_pretrained(tiny)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=768, n_layer=12, n_head=12, n_positions=1024,
                     bos_token_id=0, eos_token_id=0)  # fmt: skip
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    return folder


def _medians(model, kind: str, runs: int, device: str) -> tuple[float, float, int]:
    """Median milliseconds of a trace and of capture + explain (last layer, head and token)."""
    import viz_transformer as vt
    from bench.harness.common import median_ms, sync
    from viz_transformer.analysis import walkthrough

    last = model.facts.layers[kind] - 1

    def capture() -> None:
        cap = walkthrough.capture(model, TEXT, kind, needs=walkthrough.reads(last))
        walkthrough.explain(cap, last, cap.n_heads - 1, len(cap.query_tokens) - 1)
        sync(device)

    def trace() -> None:
        vt.trace(model, TEXT)
        sync(device)

    n = len(model.encode_text(TEXT))
    return median_ms(trace, runs), median_ms(capture, runs), n


def main() -> None:
    from bench.harness.common import add_device_arg, pick_device

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--smollm2", action="store_true", help="also the built-in LLM")
    add_device_arg(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    import torch

    import viz_transformer as vt
    from bench.harness.common import table, write_section

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    load = os.getloadavg()[0]
    models = [
        ("minilm", "minilm", "encoder"),
        ("GPT-2 base size, random", f"hf:{_gpt2_base(Path(tempfile.mkdtemp()))}", "decoder"),
    ]
    if args.smollm2:
        models.append(("smollm2", "smollm2", "decoder"))  # fmt: skip
    rows = []
    for label, name, kind in models:
        model = vt.load_model(name, device)
        trace_ms, capture_ms, n = _medians(model, kind, args.runs, device)
        rows.append([label, n, f"{trace_ms:.0f} ms", f"{capture_ms:.0f} ms",
                     f"{capture_ms / trace_ms:.1f}x"])  # fmt: skip
    body = (
        table(["model", "tokens", "trace (median)", "capture + explain (median)", "ratio"], rows)
        + f"\n\nMedians of {args.runs} runs after one warm-up. 1-minute load average before the "
        f"run: {load:.1f} on {os.cpu_count()} cores."
    )
    write_section("bench_qkv_hf", "Q/K/V walkthrough of Hugging Face models", body,
                  device)  # fmt: skip


if __name__ == "__main__":
    main()
