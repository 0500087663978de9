"""Head statistics over a corpus (issue 25): batched ``vt.corpus_stats`` against a loop of
``vt.trace``, the Ray engine on this machine, peak memory, and a cache hit.

On ``paper-en-pt`` and the built-in corpus (1,000 held-out English sentences), one torch thread:
CPU time per sentence of a ``vt.trace`` loop and of ``corpus_stats`` (engine local) on the same
first ``--same`` sentences (target: >= 4x), then ``corpus_stats`` on all 1,000 (target < 20 s),
a second call on the finished folder (cache hit), and ``engine="ray"`` on a local Ray cluster of
``--ray-cpus`` workers (wall time; skipped with ``--no-ray``). Each measurement runs in its own
process, so its peak resident memory (``ru_maxrss``) is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import table, verdict, write_section

MODEL = "paper-en-pt"
SPEEDUP_TARGET, THOUSAND_TARGET_S = 4.0, 20.0


def measure(mode: str, n: int, batch: int, ray_cpus: int) -> dict[str, float]:
    """Run one mode in this process: CPU and wall seconds, peak RSS in MB."""
    import torch

    import viz_transformer as vt
    from viz_transformer.settings import CORPORA_DIR

    torch.set_num_threads(1)
    texts = (CORPORA_DIR / "english-heldout-1000.txt").read_text().splitlines()[:n]
    model = vt.load_model(MODEL, "cpu")
    vt.trace(model, texts[0])  # warm up: first-call allocations are not the method's cost
    out = Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    kw = {}
    if mode == "ray":
        import ray

        ray.init(num_cpus=ray_cpus, include_dashboard=False, log_to_driver=False)
        kw["engine"] = "ray"
    cpu, wall = time.process_time(), time.perf_counter()
    if mode == "trace":
        for text in texts:
            vt.trace(model, text)
    else:
        vt.corpus_stats(model, texts, out, batch_size=batch, **kw)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    hit = time.perf_counter()
    if mode == "local":
        vt.corpus_stats(model, texts, out, batch_size=batch)
    hit = time.perf_counter() - hit
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    disk = sum(f.stat().st_size for f in out.glob("shard-*.parquet")) / 1e6
    return {"cpu": cpu, "wall": wall, "hit": hit, "rss": rss, "n": len(texts), "disk": disk}


def run(mode: str, n: int, args: argparse.Namespace, batch: int | None = None) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--mode", mode, "--n", str(n), "--batch",
           str(batch or args.batch), "--ray-cpus", str(args.ray_cpus)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--same", type=int, default=200, help="sentences of the trace-loop comparison")
    p.add_argument("--batch", type=int, default=32, help="batch size (vt.corpus_stats' default)")
    p.add_argument("--wide", type=int, default=64, help="a second batch size for 1,000")
    p.add_argument("--ray-cpus", type=int, default=2)
    p.add_argument("--no-ray", action="store_true")
    p.add_argument("--mode", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.mode:
        print(json.dumps(measure(args.mode, args.n, args.batch, args.ray_cpus)))
        return
    loop, same = run("trace", args.same, args), run("local", args.same, args)
    full, wide = run("local", 1000, args), run("local", 1000, args, args.wide)
    rows = [
        ["`vt.trace` loop", loop["n"], loop],
        [f"`corpus_stats` local, batch {args.batch}", same["n"], same],
        [f"`corpus_stats` local, batch {args.batch}", full["n"], full],
        [f"`corpus_stats` local, batch {args.wide}", wide["n"], wide],
    ]
    if not args.no_ray:
        rows.append([f"`corpus_stats` ray, {args.ray_cpus} workers", 1000, run("ray", 1000, args)])
    body = table(
        ["run", "sentences", "CPU s (this process)", "wall s", "sentences/s (wall)",
         "CPU ms / sentence", "peak RSS MB", "shards MB"],
        [[name, n, f"{r['cpu']:.2f}", f"{r['wall']:.2f}", f"{n / r['wall']:.1f}",
          f"{1000 * r['cpu'] / n:.1f}", f"{r['rss']:.0f}", f"{r['disk']:.2f}"]
         for name, n, r in rows],
    )  # fmt: skip
    speedup = (loop["cpu"] / loop["n"]) / (same["cpu"] / same["n"])
    body += (
        f"\n\nOn the same {args.same} sentences, CPU time per sentence: `vt.trace` loop "
        f"{1000 * loop['cpu'] / loop['n']:.1f} ms, batched {1000 * same['cpu'] / same['n']:.1f} ms:"
        f" **{speedup:.1f}x** (target >= {SPEEDUP_TARGET:.0f}x: "
        f"{verdict(SPEEDUP_TARGET, speedup)}). 1,000 sentences of the built-in corpus: "
        f"**{full['cpu']:.1f} s CPU** ({full['wall']:.1f} s wall) on one thread with batch "
        f"{args.batch}, **{wide['cpu']:.1f} s** with batch {args.wide} (target < "
        f"{THOUSAND_TARGET_S:.0f} s: {verdict(min(full['cpu'], wide['cpu']), THOUSAND_TARGET_S)});"
        " the same call "
        f"again on the finished folder (cache hit): {1000 * full['hit']:.0f} ms. The Ray row's "
        "CPU column is the driver's only (its workers are other processes); its wall time "
        "includes starting the local cluster and loading the model in each worker. The load "
        f"average when it finished: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other "
        "work shares them, which stretches wall and CPU times alike)."
    )
    write_section("bench_corpus", "Heads across a corpus: batched statistics (issue 25)", body)


if __name__ == "__main__":
    main()
