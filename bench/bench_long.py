"""Long inputs (issue 5, target 2): a trace keeps queries and keys and computes a head when asked.

Run: ``OMP_NUM_THREADS=1 python bench/bench_long.py [--device cpu] [--no-draw]``.

Cases, each in a fresh process so its peak RSS is its own:
- ``bert-4096``: a BERT-size encoder (random weights, d 384, 6 layers, 12 heads, 4,096 positions,
  ``bench/harness/models.py``) loaded through the app's ``hf:`` path, a 4,096-token input.
  Timed from the text to the first head map's JSON (trace + ``head_figure`` downsampled +
  ``to_json``); then a
  full-resolution zoom window, another head, the downsampled overview of all 72 heads.
- ``minilm-512``: the shipped MiniLM (6 x 12 heads), a 512-token input, the same steps.
- ``minilm-512-eager``: the same input with lazy capture off (every weight held), for contrast.

Peak RSS is the process's maximum resident set (``ru_maxrss``), model and Python included; the
model's own RSS after loading is printed beside it. The overview JSON is drawn in headless
Chromium (``harness.browser.draw_plotly``) unless ``--no-draw``.
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
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.common import environment, pick_device, table, verdict, write_section

CASES = {
    "bert-4096": ("bert", 4096, True),
    "minilm-512": ("minilm", 512, True),
    "minilm-512-eager": ("minilm", 512, False),
}
TARGET_S, TARGET_GB = 3.0, 1.5
COLUMNS = ["case", "tokens", "record", "trace s", "first head s (layer 0)", "first head KB",
           "zoom window ms", "last layer's first head s", "another head ms", "overview s",
           "overview MB", "overview draw (newPlot)", "RSS after load GB",
           "peak RSS GB"]  # fmt: skip


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def run_case(case: str, device: str, folder: Path) -> dict:
    """Measure one case in this process (called in a child)."""
    import torch

    from bench.harness.models import build_bert_long, text_of
    from viz_transformer import settings
    from viz_transformer.figures.attention import head_figure, overview_figure
    from viz_transformer.models.hf.model import HFModel
    from viz_transformer.models.hf.spec import hf_spec, hf_specs

    family, n, lazy = CASES[case]
    if not lazy:
        settings.LAZY_ABOVE = 10**12
        settings.MAX_MATERIALISE = 10**12
    spec = (
        hf_spec(f"hf:{build_bert_long(folder / 'bert')}")
        if family == "bert"
        else hf_specs()["minilm"]
    )
    model = HFModel.load(spec, device)
    text = text_of(lambda t: len(model.tokenizer(t)["input_ids"]), n)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    model.trace("warm up the kernels")
    loaded_gb = _rss_gb()

    start = time.perf_counter()
    trace = model.trace(text)
    traced = time.perf_counter()
    first = head_figure(trace, "encoder", 0, 0).to_json()
    first_s = time.perf_counter() - start
    out = {
        "case": case,
        "tokens": len(trace.src_tokens),
        "kind": type(trace.encoder).__name__,
        "shape": "x".join(map(str, trace.encoder.shape)),
        "trace_s": traced - start,
        "first_head_s": first_s,
        "first_head_kb": len(first) / 1024,
        "loaded_gb": loaded_gb,
    }
    start = time.perf_counter()
    head_figure(trace, "encoder", 0, 3, window=(1000 % n, 1000 % n, 256)).to_json()
    out["zoom_s"] = time.perf_counter() - start
    start = time.perf_counter()
    head_figure(trace, "encoder", 5, 11).to_json()  # the last layer: the whole forward pass
    out["last_layer_s"] = time.perf_counter() - start
    start = time.perf_counter()
    head_figure(trace, "encoder", 3, 7).to_json()
    out["other_head_s"] = time.perf_counter() - start
    start = time.perf_counter()
    overview = overview_figure(trace, "encoder").to_json()
    out["overview_s"] = time.perf_counter() - start
    out["overview_mb"] = len(overview) / 2**20
    out["peak_gb"] = _rss_gb()
    (folder / f"{case}.json").write_text(overview)
    return out


def draw(folder: Path, cases: list[str]) -> dict[str, str]:
    """Chromium draw time of each case's overview JSON (median of 3), or why it failed."""
    from playwright.sync_api import sync_playwright

    from bench.harness.browser import draw_plotly, launch

    result = {}
    with sync_playwright() as p:
        browser = launch(p)
        for case in cases:
            try:
                newplot, _ = draw_plotly(browser, (folder / f"{case}.json").read_text(), 3, 120)
                result[case] = f"{sorted(newplot)[1]:.0f} ms"
            except Exception as exc:  # report, do not hide
                result[case] = f"not drawn: {type(exc).__name__}"
        browser.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--case", choices=list(CASES), help="(internal) run one case")
    parser.add_argument("--folder", type=Path, help="(internal) scratch folder")
    parser.add_argument("--no-draw", action="store_true")
    args = parser.parse_args()
    device = pick_device(args.device)
    if args.case:
        print(json.dumps(run_case(args.case, device, args.folder)))
        return
    print(environment(device), flush=True)
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for case in CASES:
            cmd = [sys.executable, __file__, "--case", case, "--folder", tmp, "--device", device]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"case {case} failed")
            results[case] = json.loads(done.stdout.strip().splitlines()[-1])
            print(results[case], flush=True)
        drawn = {} if args.no_draw else draw(folder, list(CASES))
    for case, r in results.items():
        rows.append([
            case, r["tokens"], r["kind"], f"{r['trace_s']:.2f}", f"{r['first_head_s']:.2f}",
            f"{r['first_head_kb']:.0f}", f"{r['zoom_s'] * 1000:.0f}", f"{r['last_layer_s']:.2f}",
            f"{r['other_head_s'] * 1000:.0f}", f"{r['overview_s']:.1f}",
            f"{r['overview_mb']:.1f}", drawn.get(case, "-"), f"{r['loaded_gb']:.2f}",
            f"{r['peak_gb']:.2f}",
        ])  # fmt: skip
    big = results["bert-4096"]
    small = results["minilm-512"]
    targets = [
        ["4,096 tokens: first head map", f"< {TARGET_S:.0f} s", f"{big['first_head_s']:.2f} s",
         verdict(big["first_head_s"], TARGET_S)],
        ["4,096 tokens: peak RSS (process)", f"< {TARGET_GB} GB", f"{big['peak_gb']:.2f} GB",
         verdict(big["peak_gb"], TARGET_GB)],
        ["4,096 tokens: overview of 72 heads drawable", "drawn",
         drawn.get("bert-4096", "not measured"),
         "pass" if drawn.get("bert-4096", "").endswith("ms") else "miss"],
        ["MiniLM 512 tokens: first head map", f"< {TARGET_S:.0f} s",
         f"{small['first_head_s']:.2f} s", verdict(small["first_head_s"], TARGET_S)],
        ["MiniLM 512 tokens: peak RSS (process)", f"< {TARGET_GB} GB",
         f"{small['peak_gb']:.2f} GB", verdict(small["peak_gb"], TARGET_GB)],
    ]  # fmt: skip
    body = (
        "A long trace keeps each layer's scaled queries and keys (`LazyPatterns`) and computes a "
        "head's softmax when a figure asks. An encoder-only model runs no forward pass until a "
        "head is asked, and then only as far as that head's layer: the first map (layer 0) costs "
        "one layer; the first map of the last layer costs the whole pass (its column below). "
        "Maps larger than 256 per side are drawn as block maxima with a full-resolution zoom "
        "window of up to 256 x 256; the overview reduces each head to <= 128 x 128. Times in "
        "seconds unless marked; each case ran in its own process.\n\n"
        + table(["target", "limit", "measured", "result"], targets)
        + "\n\n"
        + table(COLUMNS, rows)
    )
    write_section("bench_long", "Long inputs: lazy per-head capture", body, device)


if __name__ == "__main__":
    main()
