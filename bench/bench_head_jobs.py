"""What heads do's long jobs on the built-in LLM ``smollm2`` (issue 28 point 4): the logit lens,
head roles and activation patching, each timed without and with a progress callback, with the
longest gap between two progress calls (a page's Stop is seen at a progress call) and the time
from a Stop half way through (a ``StopToken`` set from a timer, passed as the job's ``stop``
as the page passes it, checked at each progress point) until the call returns; the target is a
Stop that ends the work within 2 s. Inputs of 96 tokens and the page's cap, 256.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import viz_transformer as vt
from bench.harness.common import table, verdict, write_section
from viz_transformer.analysis.effects import capped_text
from viz_transformer.records.progress import Cancelled

LLM, STOP_S = "smollm2", 2.0
PARAGRAPH = (
    "The agreement on the European Economic Area was signed in August by the twelve member "
    "states and seven others. It took effect two years later, after a referendum in one of "
    "them had rejected it and the treaty was changed. "
)


def _jobs(model: vt.LoadedModel, text: str) -> dict[str, Callable[..., object]]:
    clean, corrupted = model.facts.patch_pair
    return {
        "logit lens": lambda p, stop=None: vt.logit_lens(model, text, None, p, stop),
        "head roles": lambda p, stop=None: vt.head_roles(model, "decoder", text, None, p, stop),
        "patching (the page's pair)": lambda p, stop=None: vt.patch_heads(
            model, clean, corrupted, "decoder", p, stop
        ),
    }


def _stop_after(job: Callable[..., object], after: float) -> float:
    """Seconds from ``after`` s into ``job`` until it returns, stopped as the page stops it: its
    ``stop`` token set from another thread, checked at the job's next progress point."""
    token = vt.StopToken()
    timer = threading.Timer(after, token.set)
    began = time.perf_counter()
    timer.start()
    try:
        job(None, token)
    except Cancelled:
        return time.perf_counter() - began - after
    finally:
        timer.cancel()
    return float("nan")  # ended before the Stop


def rows(model: vt.LoadedModel, tokens: int) -> list[list[object]]:
    text = capped_text(model, PARAGRAPH * 20, tokens)[0]
    out = []
    for name, job in _jobs(model, text).items():
        if tokens != 256 and name.startswith("patching"):
            continue  # the pair does not depend on the input
        start = time.perf_counter()
        job(None)
        plain = time.perf_counter() - start
        calls: list[float] = []
        start = time.perf_counter()
        job(lambda _f, calls=calls: calls.append(time.perf_counter()))
        timed = time.perf_counter() - start
        gaps = [b - a for a, b in zip([start, *calls], [*calls, start + timed], strict=True)]
        stop = _stop_after(job, timed / 2)
        out.append([name, tokens, f"{plain:.1f}", f"{timed:.1f}", len(calls),
                    f"{max(gaps):.2f}", f"{stop:.2f}", verdict(stop, STOP_S)])  # fmt: skip
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    vt.prepare_model(LLM)
    model = vt.load_model(LLM)
    model.reference_ids("Warm up.")
    header = ["job", "input tokens", "s", "s with progress", "progress calls", "longest gap s"]
    header += ["Stop half way -> returned s", f"< {STOP_S:g} s"]
    body = table(header, rows(model, 96) + rows(model, 256))
    load = os.getloadavg()[0]
    body += f"\n\n1-minute load average after it: {load:.1f} on {os.cpu_count()} cores."
    write_section("bench_head_jobs", "What heads do: lens, roles and patching stop", body)


if __name__ == "__main__":
    main()
