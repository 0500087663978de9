"""The depths x lengths sweeps of ``bench_retrieval.py --sweep`` and ``--forms`` (issue 54): one
sweep per prompt form in a fresh process (``sweep_case``, its peak RSS its own), the table of each
form's runs and means, and the heads the two forms share (``compare_forms``)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from types import SimpleNamespace

from bench.harness.common import table, verdict, write_section

NEEDLE = (
    "The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny "
    "day."
)
QUESTION = "What is the best thing to do in San Francisco?"  # Wu et al.'s question for it
SWEEP = {"depths": [0.1, 0.3, 0.5, 0.7, 0.9], "lengths": [2048, 4096]}
FORMS = {"depths": [0.25, 0.5, 0.75], "lengths": [1500]}
SWEEP_TARGET = (600.0, 2.0)  # s, peak GB
HEADER = ["prompt", "runs", "load s", "sweep s", "its CPU s", "longest gap s", "peak RSS GB",
          "needle found", "heads >= 0.1 (mean)", "top heads (mean)",
          "verdict (600 s, 2 GB)"]  # fmt: skip
CELLS = ["prompt", "depth", "length asked", "prompt tokens", "copy distance", "ROUGE-1 recall",
         "found", "heads >= 0.1", "best head", "output"]  # fmt: skip


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def sweep_case(form: str, depths: list[float], lengths: list[int]) -> dict:
    """One sweep of ``form`` over ``depths`` x ``lengths`` in this process (called in a child)."""
    import numpy as np
    import torch

    import viz_transformer as vt
    from viz_transformer.text.corpora import builtin_sentences

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    start = time.perf_counter()
    model = vt.load_model("smollm2")
    text = " ".join(builtin_sentences())
    loaded, loaded_gb = time.perf_counter() - start, _rss_gb()
    start, cpu, gaps, last = time.perf_counter(), time.process_time(), [], [time.perf_counter()]

    def progress(_: float) -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    ask = {"question": QUESTION} if form == "question" else {}
    sw = vt.retrieval_heads(
        model, [text], NEEDLE, depths=depths, lengths=lengths, prompt=form, progress=progress, **ask
    )
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    mean = sw.mean_retrieval
    cells = []
    for run in sw.runs:
        r = run.result
        best = np.unravel_index(np.argmax(r.retrieval), r.retrieval.shape)
        cells.append(
            [
                r.depth,
                run.length,
                r.prompt_length,
                r.copy_distance,
                r.recall,
                r.found,
                r.passed,
                f"L{best[0]} H{best[1]} {r.retrieval[best]:.2f}",
                r.output[:60].replace("\n", "↵").replace("|", "\\|"),
            ]
        )
    return {
        "load": loaded,
        "loaded_gb": loaded_gb,
        "seconds": took,
        "cpu": cpu,
        "peak": _rss_gb(),
        "gap": max(gaps),
        "found": sw.found,
        "passed": sw.passed,
        "cells": cells,
        "retrieval": mean.tolist(),
        "summary": sw.summary(),
    }


def _child(script: str, *args: str) -> dict:
    cmd = [sys.executable, script, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _top(retrieval, n: int = 6) -> str:
    import numpy as np

    r = np.asarray(retrieval)
    order = np.argsort(-r, axis=None, kind="stable")[:n]
    return ", ".join(f"L{i // r.shape[1]} H{i % r.shape[1]} {r.flat[i]:.2f}" for i in order)


def sweeps(script: str, forms: list[str], grid: dict, name: str, title: str, write: bool) -> None:
    """Each form's sweep in a fresh process (``script --sweep-case``), its runs and means; the
    heads the forms share; written to benchmarks.md's section ``bench_retrieval_<name>``."""
    import numpy as np

    from viz_transformer.analysis.retrieval.result import compare_forms

    got = {f: _child(script, "--sweep-case", f, json.dumps(grid)) for f in forms}
    rows, cells = [], []
    for form, g in got.items():
        limit_s, limit_gb = SWEEP_TARGET
        ok = g["seconds"] <= limit_s and g["peak"] <= limit_gb
        rows.append(
            [
                form,
                len(g["cells"]),
                f"{g['load']:.1f}",
                f"{g['seconds']:.1f}",
                f"{g['cpu']:.1f}",
                f"{g['gap']:.1f}",
                f"{g['peak']:.2f}",
                f"{g['found']:.0%}",
                g["passed"],
                _top(g["retrieval"]),
                (verdict(0, 1) if ok else verdict(1, 0)) if name == "sweep" else "-",
            ]
        )
        cells += [
            [form, *(f"{c:.2f}" if isinstance(c, float) else c for c in cell)]
            for cell in g["cells"]
        ]
    body = table(HEADER, rows) + "\n\nEach run:\n\n" + table(CELLS, cells)
    if len(got) == 2:  # compare_forms reads a sweep's form, runs and mean_retrieval
        means = [
            SimpleNamespace(form=f, runs=(), mean_retrieval=np.asarray(g["retrieval"]))
            for f, g in got.items()
        ]
        body += f"\n\n{compare_forms(*means).summary()}\n"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    body += f"\n\nLoad average at the end (1, 5, 15 min): {load}.\n"
    print(body)
    if write:
        write_section(f"bench_retrieval_{name}", title, body, "cpu", "bench_retrieval")
