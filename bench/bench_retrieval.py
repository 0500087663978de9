"""Retrieval heads (issue 47): every head of SmolLM2 scored on a needle hidden in a long text.

Run: ``OMP_NUM_THREADS=1 python bench/bench_retrieval.py [--tokens 1500 8192] [--device cpu]``
(``--sweep``: the depths x lengths sweep of issue 54, 5 depths x 2,048 and 4,096 tokens, target
10 min and 2 GB; ``--forms``: the copy and the question prompt side by side, 3 depths at 1,500
tokens each, and the heads retrieving under both or one)
(``--llama llama-3-8b --tokens 32768 --device cuda``: the published Llama-3-8B shape, random
bfloat16 weights built by ``bench/harness/llama.py``, word-level texts: timing and memory only,
since a random model copies nothing; ``--llama tiny`` runs the same path on a CPU).

Each length runs in a fresh process so its peak RSS is its own. The haystack is the shipped
held-out English sentences (``viz_transformer/corpora/english-heldout-1000.txt``) joined and cut
to the length asked, the needle Wu et al.'s San Francisco sentence at depth 0.5. Timed: the whole
``vt.retrieval_heads`` call (tokenising, greedy continuation, the lazy trace of prompt + output,
every head's rows at the output steps); the model's load is not. Peak RSS is the process's maximum
resident set (``ru_maxrss``), model and Python included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import add_device_arg, pick_device, table, verdict, write_section
from bench.harness.retrieval_sweeps import FORMS, NEEDLE, SWEEP, sweep_case, sweeps

TARGETS = {1500: (60.0, 1.5), 8192: (600.0, 3.0), 32768: (300.0, None)}  # s, peak GB
COLUMNS = ["model", "tokens", "device", "load s", "retrieval_heads s", "its CPU s", "target s",
           "RSS after load GB", "peak RSS GB", "target GB", "needle found", "top heads (retrieval)",
           "verdict"]  # fmt: skip


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def haystack(count, n_tokens: int) -> str:
    """The held-out sentences joined, as many as keep the text under ``n_tokens`` tokens."""
    from viz_transformer.text.corpora import builtin_sentences

    sentences = builtin_sentences()
    lo, hi = 1, len(sentences)
    while lo < hi:  # the most sentences whose text stays under n_tokens
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if count(" ".join(sentences[:mid])) <= n_tokens else (lo, mid - 1)
    return " ".join(sentences[:lo])


def _llama(size: str, n_tokens: int, device: str, folder: Path):
    """A random Llama of ``bench/harness/llama.py``'s ``size``, its word-level text and needle."""
    import viz_transformer as vt
    from bench.harness.llama import build_llama
    from bench.harness.models import text_of

    path = build_llama(folder / size, size, n_tokens, device)
    model = vt.load_model(f"hf:{path}", device, "bfloat16")
    vocab = model.module.config.vocab_size  # the published size; the words are a few dozen
    model.module.generation_config.suppress_tokens = list(range(len(model.tokenizer), vocab))
    text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n_tokens - 40)
    return model, text, "my friend found the key under the table"


def run_case(name: str, n_tokens: int, device: str, llama: str | None = None) -> dict:
    """Measure one length in this process (called in a child)."""
    import tempfile

    import torch

    import viz_transformer as vt

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    start, needle = time.perf_counter(), NEEDLE
    if llama:
        model, text, needle = _llama(llama, n_tokens, device, Path(tempfile.mkdtemp()))
    else:
        model = vt.load_model(name, device=device) if name != "smollm2" else vt.load_model(name)
        count = lambda t: len(model.tokenizer(t)["input_ids"])  # noqa: E731
        # the needle, the prompt's tail and the answer fit in n_tokens and in the context
        text = haystack(count, min(n_tokens - 40, model.max_positions() - 80))
    loaded, loaded_gb = time.perf_counter() - start, _rss_gb()
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    start, cpu = time.perf_counter(), time.process_time()
    r = vt.retrieval_heads(model, text, needle, 0.5)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    top = r.table.head(5)
    return {
        "tokens": len(r.prompt_tokens) + len(r.output_tokens),
        "load": loaded,
        "seconds": took,
        "cpu": cpu,
        "peak": _rss_gb(),
        "gpu_peak": torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else 0,
        "loaded_gb": loaded_gb,
        "found": r.found,
        "output": r.output,
        "top": [(int(a), int(b), float(c), float(d)) for a, b, c, d in top.values.tolist()],
        "flagged": len(r.flagged()),
        "heads": int(r.retrieval.size),
        "aligned": r.aligned,
        "steps": len(r.rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1500])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--llama", choices=["llama-3-8b", "tiny"], help="a random Llama instead")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true", help="print only; docs untouched")
    parser.add_argument("--sweep", action="store_true", help="5 depths x 2 lengths, copy prompt")
    parser.add_argument("--forms", action="store_true", help="copy and question side by side")
    parser.add_argument("--sweep-case", nargs=2, help=argparse.SUPPRESS)
    add_device_arg(parser)
    args = parser.parse_args()
    if args.sweep_case:
        grid = json.loads(args.sweep_case[1])
        print(json.dumps(sweep_case(args.sweep_case[0], grid["depths"], grid["lengths"])))
        return
    if args.sweep or args.forms:
        if args.sweep:
            title = "Retrieval heads across depth x length (issue 54)"
            sweeps(__file__, ["copy"], SWEEP, "sweep", title, not args.no_write)
        if args.forms:
            title = "Retrieval heads: the two prompt forms (issue 54)"
            sweeps(__file__, ["copy", "question"], FORMS, "forms", title, not args.no_write)
        return
    device = pick_device(args.device)
    if args.case:
        print(json.dumps(run_case(args.model, int(args.case), device, args.llama)))
        return
    rows = []
    for n in args.tokens:
        cmd = [sys.executable, __file__, "--case", str(n), "--model", args.model]
        cmd += ["--device", device, *(["--llama", args.llama] if args.llama else [])]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        got = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(got), flush=True)
        limit_s, limit_gb = TARGETS.get(n, (None, None))
        ok = limit_s is None or got["seconds"] <= limit_s
        ok = ok and (limit_gb is None or got["peak"] <= limit_gb)
        if got["gpu_peak"]:
            got["peak"] = got["gpu_peak"]  # on a GPU: its memory, the model included
        top = ", ".join(f"L{a}H{b} {c:.2f}" for a, b, c, _ in got["top"][:3])
        rows.append([args.llama or args.model, f"{got['tokens']:,}", device, f"{got['load']:.1f}",
                     f"{got['seconds']:.1f}", f"{got['cpu']:.1f}", limit_s or "-",
                     f"{got['loaded_gb']:.2f}", f"{got['peak']:.2f}", limit_gb or "-",
                     got["found"], top,
                     verdict(0, 1) if ok else verdict(1, 0)])  # fmt: skip
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    body = table(COLUMNS, rows) + f"\n\nLoad average at the end (1, 5, 15 min): {load}.\n"
    body += (
        '\n"its CPU s" is the CPU time the call used (one thread): what its wall time approaches '
        "on an idle core when the machine is shared.\n"
    )
    if not device.startswith("cuda"):
        body += (
            "\nThe GPU row (the published Llama-3-8B shape at 32,768 tokens, target 5 min): "
            "`bash bench/device_run.sh --retrieval` (or `python bench/bench_retrieval.py "
            "--llama llama-3-8b --tokens 32768 --device cuda`) "
            "on a machine with a GPU; not measured yet (no GPU was lent when this ran).\n"
        )
    write_section(
        "bench_retrieval", "Retrieval heads (issue 47)", body, device, write=not args.no_write
    )


if __name__ == "__main__":
    main()
