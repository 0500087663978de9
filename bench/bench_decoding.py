"""Step-by-step decoding with a key/value cache (issue 5, target 4): the cost of step 30 vs step 1.

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_decoding.py [--runs 7] [--device cpu]``
(``--models-dir`` keeps the built Marian for the next run).

Each model's ``decoder_session`` (the code behind the step-by-step decoder page and its greedy and
beam search) encodes a 20-word sentence once, then scores a fixed 31-token output prefix one step
at a time: ``score(prefix[:0])``, ``score(prefix[:1])``, ... ``score(prefix[:30])``, 31 steps, so
every model runs 30+ steps whatever it would predict. Every step returns the log-probabilities and
the newest attention rows of every layer and head, as on the page. Each step's time is the median
over ``--runs`` sessions; sessions with the cache (the default) and without it (``use_cache=False``:
the whole prefix decoded again at every step, the code before the cache) are interleaved.

Models, weights random (seeded) unless shipped:
- (a) the paper's Transformer with the shipped ``paper-en-pt`` configuration (3+3 layers, d_model
  256, 8 heads, 8,000 tokens), and for context the paper's base size (6+6 layers, d_model 512,
  37,000 tokens), built by ``bench/harness/models.py`` and wrapped as the app wraps a paper model;
- (b) an opus-mt-en-de-size Marian (6+6 layers, d_model 512, 8 heads, FFN 2048, 58,101 tokens)
  built offline by ``bench/harness/models.py`` into a temporary folder and loaded as ``hf:<folder>``
  through the app's registry, so the real ``hf_steps`` session code is timed;
- (c) the shipped ``bergamot-en-pt`` (its SSRU decoder keeps a recurrent state), then
  ``bench_bergamot``'s greedy translation + full trace against the wheel's native engine.

Targets: step 30 / step 1 <= 1.5 with the cache, for (a) and (b); (c) trace within 3x of native.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

import viz_transformer as vt
from bench.harness import bergamot_timing
from bench.harness.common import ROOT, pick_device, sync, table, verdict, write_section
from bench.harness.models import WORDS, build_marian_base, paper_model
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.hf import steps as hf_steps
from viz_transformer.models.results import DecoderSession

STEPS = 31  # prefixes of 0 .. 30 tokens
SHOWN = (1, 2, 10, 20, 30, 31)  # steps in the table, counted from 1
TARGET = 1.5  # step 30 / step 1 with the cache
SOURCE = " ".join(WORDS[:20])  # 20 words every random model's tokenizer reads
Factory = Callable[[bool], DecoderSession]  # use_cache -> a new session


def step_ms(factory: Factory, prefix: list[int], runs: int, device: str) -> dict[bool, list[float]]:
    """Median milliseconds of each step, with the cache (True) and without (False).

    Each run opens a new session per setting (the encoder runs there, untimed) and times its
    ``len(prefix) + 1`` steps; runs alternate the settings; the first run is a warm-up.
    """
    times = {cached: [[] for _ in range(len(prefix) + 1)] for cached in (True, False)}
    for run in range(runs + 1):
        for cached in (True, False):
            session = factory(cached)
            for t in range(len(prefix) + 1):
                start = time.perf_counter()
                session.score(prefix[:t])
                sync(device)
                if run:
                    times[cached][t].append((time.perf_counter() - start) * 1000)
    return {cached: [statistics.median(s) for s in steps] for cached, steps in times.items()}


def paper_en_pt_config(device: str) -> LoadedModel:
    """A random paper Transformer with the shipped paper-en-pt's sizes."""
    meta = ROOT / "viz_transformer" / "weights" / "paper-en-pt" / "meta.json"
    cfg = json.loads(meta.read_text())["config"]
    return paper_model(
        d_model=cfg["d_model"], n_heads=cfg["n_heads"], n_layers=cfg["n_encoder_layers"],
        d_ff=cfg["d_ff"], vocab_size=cfg["vocab_size"], max_len=cfg["max_len"], device=device,
    )  # fmt: skip


def paper_case(model: LoadedModel) -> tuple[Factory, list[int]]:
    words = itertools.islice(itertools.cycle(WORDS), STEPS - 1)
    prefix = model.vocab.encode(" ".join(words), add_eos=False)
    return (lambda cached: model.decoder_session(SOURCE, use_cache=cached)), prefix


def marian_case(model: LoadedModel) -> tuple[Factory, list[int]]:
    prefix = model.encode_text(" ".join(WORDS))[: STEPS - 1]  # no </s> among the first 30

    def factory(cached: bool) -> DecoderSession:
        return hf_steps.decoder_session(model, SOURCE, use_cache=cached)

    return factory, prefix


def bergamot_case(model: LoadedModel) -> tuple[Factory, list[int]]:
    prefix = model.sp.encode(bergamot_timing.SENTENCE * 2)[: STEPS - 1]
    sentence = bergamot_timing.SENTENCE
    return (lambda cached: model.decoder_session(sentence, use_cache=cached)), prefix


def rows_of(label: str, ms: dict[bool, list[float]], target: bool) -> list[list[str]]:
    rows = []
    for cached in (True, False):
        steps = ms[cached]
        ratio = steps[29] / steps[0]
        rows.append(
            [label, "cache" if cached else "no cache (whole prefix)"]
            + [f"{steps[s - 1]:.2f}" for s in SHOWN]
            + [f"{sum(steps):.0f}", f"{ratio:.2f}"]
            + ([f"<= {TARGET:g}", verdict(ratio, TARGET)] if target and cached else ["", ""])
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if present)")
    parser.add_argument("--runs", type=int, default=7, help="sessions per setting (median)")
    parser.add_argument("--bergamot-runs", type=int, default=15, help="bench_bergamot's runs")
    parser.add_argument("--models-dir", type=Path, help="reuse built models here (else a temp dir)")
    parser.add_argument("--no-write", action="store_true", help="print only; keep docs as is")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    device = pick_device(args.device)
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = (args.models_dir or Path(tmp)) / "marian-base"
        if not (folder / "config.json").is_file():
            build_marian_base(folder)
        cases = {
            "(a) paper, paper-en-pt config": (paper_case, lambda: paper_en_pt_config(device), True),
            "paper, base size": (paper_case, lambda: paper_model(device=device), False),
            "(b) Marian opus-mt-en-de size, hf:": (
                marian_case, lambda: vt.load_model(f"hf:{folder.resolve()}", device), True),
            "(c) bergamot-en-pt": (bergamot_case, lambda: vt.load_model("bergamot-en-pt", device),
                                   False),
        }  # fmt: skip
        for label, (case, load, target) in cases.items():
            factory, prefix = case(load())
            assert len(prefix) == STEPS - 1, (label, len(prefix))
            ms = step_ms(factory, prefix, args.runs, device)
            print(label, {k: [round(x, 2) for x in v] for k, v in ms.items()}, flush=True)
            rows += rows_of(label, ms, target)
    berg = bergamot_timing.measure("bergamot-en-pt", args.bergamot_runs, device)
    header = ["model", "decoding", *(f"step {s} ms" for s in SHOWN), "31 steps ms",
              "step 30 / step 1", "target", "verdict"]  # fmt: skip
    body = (
        f"Each step scores one more token of a fixed 31-token output prefix of a 20-word source "
        f"and returns the log-probabilities and the newest attention rows of every layer and "
        f"head (the step-by-step decoder's `DecoderSession.score`); medians of {args.runs} "
        f"sessions per setting, interleaved.\n\n{table(header, rows)}\n\n"
        f"Bergamot greedy translation + full trace of the 20-word sentence against the native "
        f"engine (`bergamot_timing.measure`, {args.bergamot_runs} interleaved runs; "
        f"translation equal to the native engine's: {berg.equal}):\n\n"
        f"{bergamot_timing.report(berg, args.bergamot_runs)}\n\n{bergamot_timing.LIMIT}\n"
    )
    write_section(
        "bench_decoding",
        "Step-by-step decoding (issue 5, target 4)",
        body,
        device,
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
