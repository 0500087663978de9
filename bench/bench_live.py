"""Live training (issue 16): how fast the tiny paper model learns to reverse words on one CPU
thread, with and without 1/sqrt(d_k), and how much slower the app answers while it trains.

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_live.py [--seconds 180]``.

1. ``LiveRun("reverse", seed 0, size "tiny")`` trains in one torch thread for ``--seconds`` of
   training time (measurements excluded). Every ``--every`` seconds: the anti-diagonal mass of
   every cross-attention head (the mean weight a query predicting output word i puts on source
   word n-1-i), averaged over 50 held-out 4-8 word inputs teacher-forced with their reversal, and
   the exact match of those 50 (greedy). Targets: the best head >= 0.8 within 60 s, exact match
   >= 90 % within 180 s.
2. The same seed without the scale for 60 s: both numbers at 60 s (target: below).
3. The Attention maps page (AppTest, ``paper-reverse``) rerun on a layer change: median time
   idle and while the server's live run (both variants, one thread) trains. Target <= 2x.
4. Two runs alternating steps in one thread against two threads of one torch thread each:
   steps per second of each run (the page uses the first: it stays within one thread).

Prints the load average (other work on this machine slows every number) and rewrites the
``bench_live`` section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from streamlit.testing.v1 import AppTest

from bench.harness.common import ROOT, pick_device, table, write_section
from viz_transformer.training.live.metrics import antidiagonal_mass, exact_match
from viz_transformer.training.live.runs import shared_trainer
from viz_transformer.training.live.train import LiveRun, LiveSettings, torch_threads
from viz_transformer.training.tasks.catalog import TASKS, pairs

MASS, MATCH, SLOWDOWN = 0.8, 0.9, 2.0  # the targets


def held_out(n: int = 50) -> list[tuple[str, str]]:
    """``n`` held-out reversal pairs of 4-8 words (seed 1, never seen in training)."""
    found = [p for p in pairs(TASKS["reverse"], 2000, 1, "held_out") if 4 <= len(p[0].split()) <= 8]
    return found[:n]


def measure(run: LiveRun, data: list[tuple[str, str]]) -> tuple[float, tuple[int, int], float]:
    """(best head's mean anti-diagonal mass, its (layer, head), exact match) of ``run`` now."""
    run.module.eval()
    with torch.no_grad():
        mass = np.mean([antidiagonal_mass(run.model.trace(s, t)) for s, t in data], axis=0)
        match = exact_match(run.model, data)
    run.module.train()
    best = np.unravel_index(int(mass.argmax()), mass.shape)
    return float(mass.max()), (int(best[0]), int(best[1])), match


def train(scale: bool, seconds: float, every: float, data: list, device: str) -> list[list[object]]:
    """Rows (training s, steps, loss, best mass, head, exact match) every ``every`` s."""
    run = LiveRun("reverse", 0, scale, "tiny", device=torch.device(device))
    rows, next_at = [], every
    with torch_threads(1):
        while run.seconds < seconds:
            loss = run.step()
            if run.seconds >= next_at or run.seconds >= seconds:
                next_at += every
                mass, head, match = measure(run, data)
                rows.append([round(run.seconds), run.step_count, round(loss, 3), round(mass, 3),
                             f"L{head[0]} H{head[1]}", f"{match:.0%}"])  # fmt: skip
                print(("scaled" if scale else "unscaled"), rows[-1], flush=True)
    return rows


def first(rows: list[list[object]], ok) -> str:
    hit = next((r for r in rows if ok(r)), None)
    return f"{hit[0]} s (step {hit[1]})" if hit else "not reached"


def rerun_ms(app: AppTest, runs: int) -> float:
    times = []
    for i in range(runs):
        app.selectbox(key="layer").set_value(i % 2)
        start = time.perf_counter()
        app.run()
        times.append((time.perf_counter() - start) * 1000)
        assert not app.exception, app.exception
    return statistics.median(times)


def page_slowdown(runs: int) -> tuple[float, float]:
    """Median rerun of the Attention maps page idle, then while the live run trains."""
    app = AppTest.from_file(str(ROOT / "pages" / "attention_maps.py"), default_timeout=120)
    app.session_state["model"] = "paper-reverse"
    app.session_state["sentence"] = "happy king red ship blue sea"
    app.run()
    idle = rerun_ms(app, runs)
    trainer = shared_trainer()
    trainer.start("reverse", seconds=300)
    time.sleep(8)  # past the first steps and reports
    busy = rerun_ms(app, runs)
    trainer.stop()
    return idle, busy


def steps_per_s(two_threads: bool, seconds: float) -> float:
    """Steps per second of each of two runs (scaled, unscaled) sharing one thread or two."""
    runs = [LiveRun("reverse", 0, s, "tiny", LiveSettings()) for s in (True, False)]

    def loop(chosen: list[LiveRun]) -> None:
        with torch_threads(1):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for run in chosen:
                    run.step()

    groups = [[r] for r in runs] if two_threads else [runs]
    workers = [threading.Thread(target=loop, args=(g,)) for g in groups]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return min(r.step_count for r in runs) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--every", type=float, default=10)
    parser.add_argument("--unscaled", type=float, default=60, help="seconds without the scale")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: the library's)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    data, device = held_out(), pick_device(args.device)
    scaled = train(True, args.seconds, args.every, data, device)
    unscaled = train(False, args.unscaled, args.every, data, device)
    at60 = [r for r in scaled if r[0] <= 61][-1]
    idle, busy = page_slowdown(args.runs)
    alternating, parallel = steps_per_s(False, 15), steps_per_s(True, 15)
    load_after = os.getloadavg()
    s = LiveSettings()
    summary = table(
        ["target", "measured", "verdict"],
        [[f"scaled: a cross-attention head with anti-diagonal mass >= {MASS} within 60 s",
          first(scaled, lambda r: r[3] >= MASS), "pass" if at60[3] >= MASS else "miss"],
         [f"scaled: exact match >= {MATCH:.0%} within {args.seconds:.0f} s",
          first(scaled, lambda r: float(r[5][:-1]) / 100 >= MATCH),
          "pass" if any(float(r[5][:-1]) / 100 >= MATCH for r in scaled) else "miss"],
         ["unscaled, same seed, at 60 s: both below",
          f"mass {unscaled[-1][3]}, exact match {unscaled[-1][5]}",
          "pass" if unscaled[-1][3] < MASS and float(unscaled[-1][5][:-1]) < 90 else "miss"],
         [f"Attention maps rerun while training <= {SLOWDOWN:.0f}x idle",
          f"{idle:.0f} ms idle, {busy:.0f} ms training ({busy / idle:.2f}x)",
          "pass" if busy <= SLOWDOWN * idle else "miss"]],
    )  # fmt: skip
    header = ["training s", "step", "loss", "best mass", "head", "exact match (50)"]
    body = (
        f"Tiny model: d_model 64, 2 heads (d_k 32), 2 + 2 layers, d_ff 256, no dropout; batch "
        f"{s.batch_size}, Adam (0.9, 0.98, 1e-9), section 5.3's schedule with warmup {s.warmup} "
        f"and factor {s.lr_factor}, label smoothing {s.label_smoothing}; one torch thread.\n"
        f"Load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (2 cores; other "
        "work on the machine slows every number).\n\n"
        + summary
        + "\n\nWith 1/√d_k:\n\n"
        + table(header, scaled)
        + "\n\nWithout 1/√d_k (same seed):\n\n"
        + table(header, unscaled)
        + f"\n\nBoth runs at once, steps per second of each: alternating in one thread "
        f"{alternating:.1f}, two threads {parallel:.1f} (the page alternates: one CPU thread)."
    )
    write_section("bench_live", "Live training: watch it learn (issue 16)", body, device)


if __name__ == "__main__":
    main()
