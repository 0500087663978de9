"""Head importance: every head of one attention kind ablated alone on a 20-word sentence.

For ``paper-en-pt`` and ``bergamot-en-pt`` (issue 15: < 2 s each on a 2-core CPU with
OMP_NUM_THREADS=1), the time of ``vt.head_importance`` per kind (the greedy output, one batched
pass per 64 ablations), and the redundancy of ``paper-reverse``'s cross-attention heads on 40
held-out inputs (the facts ``tests/integration/test_heads_models.py`` pins). For the built-in
LLM ``smollm2`` (30 layers x 9 heads, decoder-only; < 20 s at 20 tokens), one timed run of
``vt.head_importance`` on a 20-token prompt (its 5-token greedy continuation scored; each of the
270 ablated copies rerun from its head's layer on, ``LoadedModel.layer_runs``, 64 per pass),
wall and thread CPU time, the same run through the generic whole-pass path for comparison
(``--no-baseline`` skips it), and its induction scores (``vt.head_roles``; several > 0.3).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

import viz_transformer as vt
from bench.harness.common import add_device_arg, pick_device, sync, table, verdict, write_section
from viz_transformer.training.tasks.catalog import TASKS, pairs

SENTENCE = (
    "The agreement on the European Economic Area was signed in August 1992 by the twelve "
    "member states and seven other countries."
)  # 20 words
TARGET_S = 2.0
LLM, LLM_TARGET_S = "smollm2", 20.0
LLM_PROMPT = (
    "The agreement on the European Economic Area was signed in August by the twelve member "
    "states and seven others."
)  # 20 SmolLM2 tokens


def importance_rows(names: list[str], runs: int, device: str) -> list[list[object]]:
    rows = []
    for name in names:
        model = vt.load_model(name)
        for kind in model.spec.shows:
            vt.head_importance(model, SENTENCE, kind)  # warm-up (greedy output, allocations)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                scores = vt.head_importance(model, SENTENCE, kind)
                sync(device)
                times.append(time.perf_counter() - start)
            best = sorted(times)[len(times) // 2]
            n_src = len(model.source_ids(SENTENCE)[0])
            rows.append([name, kind, "x".join(map(str, scores.shape)), n_src, f"{best:.2f}",
                         f"< {TARGET_S:g}", verdict(best, TARGET_S)])  # fmt: skip
    return rows


def timed_importance(model: vt.LoadedModel, calls: list[float]) -> tuple[np.ndarray, float, float]:
    """``vt.head_importance`` of the LLM prompt with its wall and thread CPU seconds."""
    wall, cpu = time.perf_counter(), time.thread_time()
    scores = vt.head_importance(model, LLM_PROMPT, "decoder", progress=calls.append)
    return scores, time.perf_counter() - wall, time.thread_time() - cpu


def llm_rows(baseline: bool) -> tuple[list[list[object]], str]:
    """The decoder-only row (one timed run after the greedy continuation is warm) and a line
    on the induction heads and the timing."""
    vt.prepare_model(LLM)  # converts the GGUF once (~60-90 s), then a no-op
    model = vt.load_model(LLM)
    calls: list[float] = []
    model.reference_ids(LLM_PROMPT)  # warm-up: first passes allocate
    scores, took, cpu = timed_importance(model, calls)
    n = len(model.source_ids(LLM_PROMPT)[0])
    row = [LLM, "decoder", "x".join(map(str, scores.shape)), n, f"{took:.1f}",
           f"< {LLM_TARGET_S:g}", verdict(took, LLM_TARGET_S)]  # fmt: skip
    line = (
        f"`{LLM}` importance: {took:.1f} s wall, {cpu:.1f} s thread CPU time, {len(calls)} "
        "progress callbacks (each ablated copy rerun from its head's layer on the clean pass's "
        "kept layer inputs, `LoadedModel.layer_runs`)"
    )
    if baseline:  # the generic path: every copy runs the whole model
        model.layer_runs = lambda *_: None  # type: ignore[method-assign]
        whole, w_took, w_cpu = timed_importance(model, [])
        del model.layer_runs
        line += (
            f"; the generic whole-pass path took {w_took:.1f} s wall, {w_cpu:.1f} s thread "
            f"CPU, largest difference to the fast path {np.abs(whole - scores).max():.1e} nats"
        )
    line += f". 1-minute load average after it: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
    induction = vt.head_roles(model, "decoder", LLM_PROMPT)["induction"]
    top = sorted(((float(v), (int(a), int(h))) for (a, h), v in np.ndenumerate(induction)))[::-1]
    line += (
        f"\n\n`{LLM}` induction score (`vt.head_roles`, the prompt's words shuffled and "
        f"repeated): {int((induction > 0.3).sum())} heads above 0.3; the top five "
        + ", ".join(f"L{lh[0]} H{lh[1]} {v:.2f}" for v, lh in top[:5])
        + "."
    )
    return [row], line


def redundancy_rows() -> list[list[object]]:
    model = vt.load_model("paper-reverse")
    data = pairs(TASKS["reverse"], 40, seed=20261121, split="held_out")

    def correct(heads: list[tuple[str, int, int]]) -> int:
        return sum(vt.trace(model, s, ablate=heads).output_text == t for s, t in data)

    rows: list[list[object]] = [["none", correct([])]]
    for r in (1, 2, 3, 4):
        for hs in itertools.combinations(range(4), r):
            rows.append(
                [" + ".join(f"L1 H{h}" for h in hs), correct([("cross", 1, h) for h in hs])]
            )
    rows.append(["all of layer 0", correct([("cross", 0, h) for h in range(4)])])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per row (median)")
    parser.add_argument("--no-llm", action="store_true", help=f"skip {LLM} (~1 min per run)")
    parser.add_argument(
        "--no-baseline", action="store_true", help=f"skip {LLM}'s generic whole-pass timing"
    )
    add_device_arg(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.set_num_threads(1)
    names = [n for n in ("paper-en-pt", "bergamot-en-pt") if n in vt.available_models()]
    header = ["model", "kind", "layers x heads", "source tokens", "median s", "target", "verdict"]
    rows, induction = importance_rows(names, args.runs, device), ""
    if not args.no_llm:
        llm, induction = llm_rows(not args.no_baseline)
        rows += llm
    timings = table(header, rows)
    body = (
        f"Sentence (20 words): {SENTENCE}\n\n{LLM} prompt (20 tokens): {LLM_PROMPT}\n\n"
        f"{timings}\n\n{induction}"
        "\n\n`paper-reverse`, cross-attention heads ablated (zeroed `hook_z`, greedy decoding "
        "rerun) on 40 held-out inputs (seed 20261121): outputs still exactly reversed\n\n"
        f"{table(['heads ablated', 'correct of 40'], redundancy_rows())}\n"
    )
    write_section("bench_heads", "What heads do: head importance and redundancy", body, device)


if __name__ == "__main__":
    main()
