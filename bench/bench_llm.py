"""The built-in LLM ``smollm2`` (issue 14): conversion, cached load, trace, long prompt, generation.

Run: ``OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/bench_llm.py [--runs 5] [--cache DIR]``

- conversion: the wheel's GGUF de-quantised into a fresh cache folder (a child process, timed by
  the parent), skipped when ``--cache`` names a folder that already holds it;
- cached load: a fresh child process timing ``vt.load_model("smollm2")`` from the cache (the
  transformers import excluded: it is paid once by any Hugging Face model);
- 20-token trace: ``vt.trace`` of a 20-token prompt after load (median of ``--runs``);
- 512-token prompt: in that child, ``vt.trace`` then the first head map (layer 0, head 0; the
  trace keeps queries and keys, ``LazyPatterns``), and the child's peak RSS (``ru_maxrss``);
- sinks and walkthrough: the first-token mass of all 30 x 9 heads of a 20-token trace, and the
  Q/K/V walkthrough's capture of every layer plus one head explained (medians of ``--runs``);
- generation: a decoder session (the step-by-step page's code, key/value cache) scoring a fixed
  31-token continuation one step at a time; step 30 against step 1 (medians over ``--runs``).

Targets: trace < 1.5 s; first head map < 5 s with peak RSS < 2.5 GB; step 30 <= 1.5 x step 1.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = "The Transformer replaced recurrence with attention, and today every large language model"
LONG = "Attention lets every token look at every earlier token in one matrix product. "


def child(stage: str) -> dict[str, float]:
    """Run in a fresh process: ``convert`` or ``long`` (cached load + 512-token first map)."""
    import transformers  # noqa: F401  (imported before timing: every HF model pays it)

    import viz_transformer as vt

    start = time.perf_counter()
    if stage == "convert":
        vt.prepare_model("smollm2")
        return {"convert_s": time.perf_counter() - start}
    model = vt.load_model("smollm2", "cpu")
    load_s = time.perf_counter() - start
    ids = model.tokenizer(LONG * 40)["input_ids"][:512]
    text = model.tokenizer.decode(ids)
    start = time.perf_counter()
    trace = vt.trace(model, text)
    first = trace.decoder[0, 0]
    first_s = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB -> MB on Linux
    return {"load_s": load_s, "first_map_s": first_s, "rss_mb": rss, "n": len(trace.tgt_tokens),
            "lazy": type(trace.decoder).__name__, "map_shape": list(first.shape)}  # fmt: skip


def run_child(stage: str, cache: Path) -> dict[str, float]:
    env = {**os.environ, "VT_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, __file__, "--child", stage], env=env, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def _sinks_and_walkthrough(model, prompt: str, runs: int) -> tuple[float, float]:
    """Medians over ``runs``: the sink mass of every head of a fresh trace (``analysis.sinks``),
    and the walkthrough's capture of every layer (``models/hf/qkv.py``) plus one head's steps."""
    import viz_transformer as vt
    from viz_transformer.analysis import sinks, walkthrough

    sink, capture = [], []
    for _ in range(runs):
        arr = vt.trace(model, prompt).decoder
        start = time.perf_counter()
        sinks.sink_mass(arr, "decoder")
        sink.append(time.perf_counter() - start)
        start = time.perf_counter()
        cap = walkthrough.capture(model, prompt, "decoder")
        walkthrough.explain(cap, 15, 4, len(cap.query_tokens) - 1)
        capture.append(time.perf_counter() - start)
    return statistics.median(sink), statistics.median(capture)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=None, help="reuse this cache folder")
    parser.add_argument("--child", choices=["convert", "long"], default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    cache = args.cache or Path(tempfile.mkdtemp(prefix="vt-bench-llm-"))
    convert = None
    if not (cache / "smollm2-135m-instruct-q4_1").exists():
        start = time.perf_counter()
        run_child("convert", cache)
        convert = time.perf_counter() - start
    long = run_child("long", cache)
    os.environ["VT_CACHE_DIR"] = str(cache)
    import torch

    import viz_transformer as vt
    from bench.harness.common import table, verdict, write_section

    torch.set_num_threads(1)
    model = vt.load_model("smollm2", "cpu")
    prompt = model.tokenizer.decode(model.tokenizer(f"{PROMPT} {LONG}")["input_ids"][:20])
    n_prompt = len(model.encode_text(prompt))
    times = []
    for _ in range(args.runs + 1):
        start = time.perf_counter()
        vt.trace(model, prompt)
        times.append(time.perf_counter() - start)
    trace_s = statistics.median(times[1:])
    sink_s, capture_s = _sinks_and_walkthrough(model, prompt, args.runs)
    continuation = list(range(1000, 1031))  # a fixed 31-token continuation
    steps: dict[int, list[float]] = {1: [], 30: []}
    for _ in range(args.runs):
        session = model.decoder_session(prompt)
        for t in range(31):
            start = time.perf_counter()
            session.score(continuation[:t])
            if t + 1 in steps:
                steps[t + 1].append((time.perf_counter() - start) * 1000)
    s1, s30 = statistics.median(steps[1]), statistics.median(steps[30])
    rows = [
        ["GGUF -> safetensors conversion (once)", "-" if convert is None else f"{convert:.1f} s",
         "about 35 s expected", ""],
        ["cached load (fresh process)", f"{long['load_s']:.2f} s", "< 6 s",
         verdict(long["load_s"], 6)],
        [f"trace, {n_prompt}-token prompt (median)", f"{trace_s:.2f} s", "< 1.5 s",
         verdict(trace_s, 1.5)],
        [f"{long['n']}-token prompt: trace + first head map ({long['lazy']})",
         f"{long['first_map_s']:.2f} s", "< 5 s", verdict(long["first_map_s"], 5)],
        ["peak RSS of that process (load + 512 tokens)", f"{long['rss_mb']:.0f} MB", "< 2,500 MB",
         verdict(long["rss_mb"], 2500)],
        ["attention-sink mass, 30 x 9 heads of that trace (median)", f"{sink_s * 1000:.1f} ms",
         "", ""],
        ["Q/K/V walkthrough capture + one head explained (median)", f"{capture_s:.2f} s", "", ""],
        ["generation step 1 / step 30 (KV cache)", f"{s1:.1f} / {s30:.1f} ms",
         "step 30 <= 1.5 x step 1", verdict(s30 / s1, 1.5)],
    ]  # fmt: skip
    body = (
        table(["what", "measured", "target", ""], rows)
        + f"\n\n1-minute load average after the run: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores (other work on the machine slows every number)."
    )
    write_section("bench_llm", "Built-in LLM smollm2 (issue 14)", body)


if __name__ == "__main__":
    main()
