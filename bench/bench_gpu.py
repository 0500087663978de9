"""The GPU rows of issues 13, 36 and 43: a BERT-size encoder and an 8B Llama at long inputs, and
training speed.

Run on a GPU machine:
``VT_DEVICE=cuda OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_gpu.py``
(``--device`` overrides ``VT_DEVICE``). Rows:

- a BERT-size encoder (random weights, d 384, 6 layers x 12 heads,
  ``bench/harness/models.py``) loaded through the app's ``hf:`` path, at ``--lengths`` tokens
  (default 4,096, 16,384 and 32,768):
  seconds from the text to the first head map's figure JSON (trace + ``head_figure`` +
  ``to_json``; targets on one H100 < 0.3 s, < 0.6 s and < 2 s, issue 36), the overview of every
  head (``overview_figure`` + ``to_json``, from the same trace; target < 10 s at 32,768) and the
  peak memory of the device up to the first map (``torch.cuda.max_memory_allocated``; on the CPU
  the process's peak RSS). A long trace keeps queries and keys on the device and computes each
  head there in tiles (``records/tiles.py``);
- an 8-billion-parameter decoder (issue 43): the published Llama-3-8B configuration (32 layers,
  32 query heads sharing 8 key/value heads, d_model 4096, RoPE theta 500,000;
  ``bench/harness/llama.py``) with random weights drawn in bfloat16 on the device, saved as a
  Hugging Face folder and loaded
  back through ``vt.load_model("hf:<folder>", dtype="bfloat16")``; at ``--llama-lengths`` (8,192
  and 32,768): trace + the first head map (target < 2 s on one H100), the overview of all 1,024
  heads (< 30 s), one query-key score split every way (< 1 s each), what a head writes at one
  position (< 1 s), peak memory in the row, weights included (< 40 GB); above 32,768 tokens
  (``--llama8b`` adds 131,072) every head of layer 0 instead of the overview (< 60 s) and a
  1,024 x 1,024 window at full resolution (< 1 s). A cell that fails names its exception. On a
  CPU the same code runs on ``--llama tiny`` (the same shape, 2 layers, d 64) by default;
- training the paper model of ``paper-reverse`` (``training.steps.train_step``, batch 64,
  bf16 autocast on CUDA): target tokens per second on the CPU and on the device.

The other GPU rows come from the scripts that measure them on any device: capture overhead at
32/128/512 tokens (``bench_capture.py``), decoding step 1 vs 30 (``bench_decoding.py``), the
20-word Bergamot trace (``bench_bergamot.py``), each with ``--device cuda``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VT_MAX_CHARS", "1000000")  # 32,768 words pass the input check
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from bench.harness import stats
from bench.harness.common import add_device_arg, pick_device, sync, table, verdict, write_section
from bench.harness.llama import LLAMA_COLUMNS, LLAMA_LENGTHS, SIZES, llama_rows
from bench.harness.models import build_bert_long, text_of

LENGTHS = (4096, 16384, 32768)
FIRST_MAP_TARGETS_S = {4096: 0.3, 16384: 0.6, 32768: 2.0}  # first head map on one H100 (issue 36)
OVERVIEW_TARGET_S = {32768: 10.0}  # every head, downsampled


def _target(value: float, targets: dict[int, float], n: int) -> str:
    """``value`` with ``< target: pass/miss`` where ``n`` has a target."""
    if n not in targets:
        return f"{value:.2f}"
    return f"{value:.2f} (< {targets[n]:g}: {verdict(value, targets[n])})"


def encoder_rows(device: str, lengths: list[int], folder: Path) -> list[list[object]]:
    """One row per length: tokens, record, trace s, first head map s, overview s, peak memory."""
    from viz_transformer.figures.attention import head_figure, overview_figure
    from viz_transformer.models.hf.model import HFModel
    from viz_transformer.models.hf.spec import hf_spec

    path = build_bert_long(folder / "bert", positions=max(lengths))
    model = HFModel.load(hf_spec(f"hf:{path}"), device)
    model.trace("warm up the kernels")
    gpu = device.startswith("cuda")  # the targets are for one H100, not for a CPU
    first_targets, overview_targets = (FIRST_MAP_TARGETS_S, OVERVIEW_TARGET_S) if gpu else ({}, {})
    rows = []
    for n in lengths:
        text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n)
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        trace = model.trace(text)
        sync(device)
        traced = time.perf_counter() - start
        head_figure(trace, "encoder", 0, 0).to_json()
        first = time.perf_counter() - start
        peak = stats.peak(device)  # up to the first map, as before issue 36
        start = time.perf_counter()
        overview_figure(trace, "encoder").to_json()
        overview = time.perf_counter() - start
        record = type(trace.encoder).__name__
        rows.append([n, record, f"{traced:.2f}", _target(first, first_targets, n),
                     _target(overview, overview_targets, n), peak])  # fmt: skip
        del trace
    return rows


def tokens_per_second(device: str, steps: int) -> float:
    """Target tokens per second of ``train_step`` on the reverse task (batch 64, seed 0)."""
    from viz_transformer.networks.config import TransformerConfig
    from viz_transformer.networks.paper import Transformer
    from viz_transformer.text.vocab import WordVocab
    from viz_transformer.training.steps import train_step
    from viz_transformer.training.tasks.catalog import TASKS, pairs
    from viz_transformer.training.tasks.train import TrainSettings, _batch

    task, settings = TASKS["reverse"], TrainSettings()
    vocab = WordVocab.build(task.lexicon, task.detok)
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=len(vocab))).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    data, rng = pairs(task, 4096, 0, "train"), random.Random(0)
    batches = [_batch(vocab, rng.sample(data, settings.batch_size), model.pe.device)
               for _ in range(steps + 2)]  # fmt: skip
    for src, tgt in batches[:2]:  # warm-up
        train_step(model, opt, sched, src, tgt, vocab.pad_id, settings.label_smoothing)
    sync(device)
    tokens = sum(int((tgt[:, 1:] != vocab.pad_id).sum()) for _, tgt in batches[2:])
    start = time.perf_counter()
    for src, tgt in batches[2:]:
        train_step(model, opt, sched, src, tgt, vocab.pad_id, settings.label_smoothing)
    sync(device)
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_device_arg(parser)
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--train-steps", type=int, default=50, help="timed training steps")
    parser.add_argument(
        "--llama", choices=(*SIZES, "none"), help="default: llama-3-8b on a GPU, tiny on a CPU"
    )
    parser.add_argument("--llama-lengths", type=int, nargs="+", default=list(LLAMA_LENGTHS))
    parser.add_argument("--no-write", action="store_true", help="print only; keep docs as is")
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    size = args.llama or ("llama-3-8b" if device.startswith("cuda") else "tiny")
    with tempfile.TemporaryDirectory() as tmp:
        enc = encoder_rows(device, args.lengths, Path(tmp))
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        about, llama = (
            ("", []) if size == "none" else llama_rows(device, args.llama_lengths, Path(tmp), size)
        )
    speeds = {"cpu": tokens_per_second("cpu", args.train_steps)}
    if device != "cpu":
        speeds[device] = tokens_per_second(device, args.train_steps)
    train = [[d, f"{v:,.0f}", f"{v / speeds['cpu']:.1f}x"] for d, v in speeds.items()]
    columns = ["tokens", "record", "trace s", "first head map s", "overview s",
               "peak memory to the first map"]  # fmt: skip
    body = (
        "BERT-size encoder (random weights, d 384, 6 x 12 heads): the first head map, then the "
        "overview of all 72 heads from the same trace (targets on one H100):\n\n"
        + table(columns, enc)
        + (
            f"\n\nA Llama-class decoder, {about} (targets on one H100):\n\n"
            + table(LLAMA_COLUMNS, llama)
            if llama
            else ""
        )
        + f"\n\nTraining the paper-reverse model (batch 64, {args.train_steps} steps):\n\n"
        + table(["device", "target tokens/s", "vs CPU"], train)
    )
    title = "GPU: long encoder, an 8B decoder and training (issues 13, 36, 43)"
    write_section("bench_gpu", title, body, device, write=not args.no_write)


if __name__ == "__main__":
    main()
