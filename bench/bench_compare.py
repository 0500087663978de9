"""Comparing two models head by head (issue 26): ``vt.compare`` of ``paper-en-pt`` against its
teacher Bergamot EN->PT on the 20 everyday sentences, encoder and cross (target < 10 s for both,
one thread), how far the student's encoder is from the teacher's, and with ``--browser`` the
"Compare two models" page's first chart on a fresh server (cold, then warm: < 3 s).

Each timed ``vt.compare`` call traces both models on every sentence (A greedy, B teacher-forced
on A's output for cross) and computes every head pair's distance; the models are loaded once
before (their load is reported apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch

import viz_transformer as vt
from bench.harness.common import ROOT, table, verdict, write_section
from viz_transformer.analysis.comparison.distances import head_distances
from viz_transformer.analysis.comparison.model_pair import paired_traces
from viz_transformer.analysis.comparison.tracing import patterns
from viz_transformer.training.en_pt.everyday import EVERYDAY

A, B = "paper-en-pt", "bergamot-en-pt"
TARGET_S, PAGE_TARGET_S = 10.0, 3.0
PAGES = {  # the compare page, and the attention page on the same server as a yardstick
    "Compare two models (paper-en-pt vs bergamot-en-pt, encoder, 5 sentences)": "compare_models",
    "Attention maps (paper-en-pt, for comparison)": "attention_maps",
}


def timed(fn, runs: int) -> tuple[float, object]:
    """Median seconds of ``runs`` calls of ``fn`` and its last result."""
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def library_rows(runs: int) -> tuple[list[list[object]], str]:
    """Per kind: the whole call, its tracing and its distances; then the encoder's diagonal."""
    start = time.perf_counter()
    a, b = vt.load_model(A, "cpu"), vt.load_model(B, "cpu")
    load = time.perf_counter() - start
    vt.trace(a, EVERYDAY[0]), vt.trace(b, EVERYDAY[0])  # first-call costs out of the timings
    rows, total, results = [], 0.0, {}
    for kind in ("encoder", "cross"):
        seconds, results[kind] = timed(lambda k=kind: vt.compare(a, b, EVERYDAY, k), runs)
        tr_s, (ta, tb) = timed(lambda k=kind: paired_traces(a, b, EVERYDAY, k), runs)
        pa, pb = patterns(ta, kind), patterns(tb, kind)
        js_s, _ = timed(lambda pa=pa, pb=pb: head_distances(pa, pb), runs)
        shape = "x".join(map(str, results[kind].distance.shape))
        rows.append(
            [kind, shape, results[kind].rows, f"{seconds:.2f}", f"{tr_s:.2f}", f"{js_s:.3f}"]
        )
        total += seconds
    rows.append(["both", "", "", f"{total:.2f}", "", ""])
    try:
        vt.compare(a, b, EVERYDAY[:1], "decoder")
        refused = "no error (unexpected)"
    except ValueError as exc:
        refused = str(exc)
    d = results["encoder"].distance.reshape(48, 48)
    diag, off = np.diag(d), d + np.eye(48) * 9
    matched = sum(m.a == m.b for m in results["encoder"].matching)
    cross = results["cross"].matching
    facts = (
        f"Models loaded in {load:.1f} s. Total of both kinds: **{total:.2f} s** (target < "
        f"{TARGET_S:.0f} s: {verdict(total, TARGET_S)}).\n\n"
        f"Encoder (the student kept its teacher's, stored in float16): {matched} of 48 heads "
        f"matched to themselves; matched distance mean {diag.mean():.4f}, max {diag.max():.4f}; "
        f"the closest pair of different heads {off.min():.3f}. Cross-attention (the decoder was "
        f"retrained): {sum(m.a == m.b for m in cross)} of 16 matched to themselves, matched "
        f"distance {min(m.distance for m in cross):.3f}-{max(m.distance for m in cross):.3f}.\n\n"
        f'`kind="decoder"`: ValueError “{refused}”'
    )
    return rows, facts


def returning(browser, url: str, runs: int = 3) -> float:
    """Median seconds to the first chart in a new tab of a browser that has opened the page
    before (its HTTP and code caches kept, as a student's browser after the first page): each
    tab is a new Streamlit session."""
    from bench.harness.browser import drawn

    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        times = []
        for _ in range(runs + 1):  # the first tab fills the caches
            page = context.new_page()
            page.set_default_timeout(180_000)
            start = time.perf_counter()
            page.goto(url)
            drawn(page, False)
            times.append(time.perf_counter() - start)
            page.close()
        return statistics.median(times[1:])
    finally:
        context.close()


def page_rows() -> list[list[object]]:
    """The page's first chart on a fresh server: first visit (models load), then warm in a
    fresh browser profile and in a returning browser."""
    from playwright.sync_api import sync_playwright

    from bench.harness.browser import launch, visit
    from bench.harness.server import serve

    log = ROOT / "artifacts" / "bench-compare-server.log"
    with serve(log) as url, sync_playwright() as p:
        browser = launch(p)
        try:
            rows = []
            for title, path in PAGES.items():
                cold = visit(browser, f"{url}/{path}", False)
                warm = statistics.median([visit(browser, f"{url}/{path}", False) for _ in range(3)])
                back = returning(browser, f"{url}/{path}")
                rows.append([title, f"{cold:.1f}", f"{warm:.1f}", verdict(warm, PAGE_TARGET_S),
                             f"{back:.1f}", verdict(back, PAGE_TARGET_S)])  # fmt: skip
        finally:
            browser.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per row (median)")
    parser.add_argument("--browser", action="store_true", help="also time the page's first chart")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, facts = library_rows(args.runs)
    header = [
        "kind",
        "distance shape",
        "query rows",
        "vt.compare s",
        "of which traces s",
        "distances s",
    ]
    body = (
        f"{A} against {B} on the {len(EVERYDAY)} everyday sentences "
        f"(`training/en_pt/everyday.py`), median of {args.runs} runs.\n\n"
        f"{table(header, rows)}\n\n{facts}\n"
    )
    if args.browser:
        page = ["page", "first visit s", "warm, new profile s", f"< {PAGE_TARGET_S:.0f} s",
                "warm, returning browser s", f"< {PAGE_TARGET_S:.0f} s"]  # fmt: skip
        body += (
            "\nNavigation -> first chart drawn and the script run finished, in headless "
            "Chromium, one fresh server (the load average is below). First visit: the models "
            "load. Warm, new profile: a fresh browser context per visit (`harness.browser.visit`), "
            "so the 4.7 MB plotly.js bundle is fetched, compiled and evaluated every time; "
            "median of 3. Warm, returning browser: new tabs (new sessions) of one context that "
            "has opened the page once, its HTTP and code caches kept, as a student's browser "
            "after the first page; median of 3.\n\n"
        )
        rows = page_rows()
        load = os.getloadavg()[0]
        body += table(page, rows) + f"\n\n1-minute load average after: {load:.1f}.\n"
    write_section("bench_compare", "Comparing two models head by head (issue 26)", body)


if __name__ == "__main__":
    main()
