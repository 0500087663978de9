"""Against bertviz (issue 5, target 5): the same attention at 64, 256 and 512 tokens drawn by
bertviz's ``model_view`` and by our layers x heads overview: Python build time, payload size, and
whether (and how fast) headless Chromium draws it.

Run: ``OMP_NUM_THREADS=1 python bench/bench_bertviz.py [--tokens 64 256 512] [--timeout 60]``.

Setup (bench only; the tests never import bertviz): bertviz 1.4.1 declares transformers, torch,
boto3, sentencepiece, regex, tqdm and requests as dependencies; ``model_view`` itself needs only
torch (already pinned here) and ``IPython.display``. So, without touching the pinned packages::

    .venv/bin/pip install --no-deps -r bench/requirements-bench.txt

installs ``bertviz==1.4.1``, ``ipython==9.18.1`` and ``traitlets==5.16.1`` (pure Python; with
the rest of the venv, ``from IPython.display import HTML`` imports). bertviz's page loads
require.js 2.3.6, d3 5.7.0 and jquery 2.0.0 from a CDN, which this machine cannot reach: the
script fetches the same files once with ``npm pack`` (d3@5.7.0, requirejs@2.3.6, and jquery@2.1.0
because 2.0.0 is not on npm) into ``artifacts/bench-js/`` and Chromium is served them locally in
place of the CDN; every other request is refused.

The attention: 6 layers x 12 heads (BERT-base's heads, half its layers), float32, rows of a
softmax over random scores plus one pattern per head (diagonal, previous token, first token, or
none), built once per length. Ours: ``overview_figure(trace, "encoder")`` + ``fig.to_json()``,
drawn in a static page with the plotly package's own plotly.js (4.8 MB, loaded once per browser
session and cached; not counted). bertviz: ``model_view(attention, tokens, html_action="return")``
(its HTML carries its own 18 KB of JavaScript; its libraries are not counted either). "Drawn":
navigation start to painted (ours: ``Plotly.newPlot`` resolved; bertviz: every head's thumbnail
in the SVG), one animation frame later, in the page's clock; parsing the payload counts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import Browser, Route, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from bench.harness.browser import draw_plotly, launch
from bench.harness.common import ROOT, environment, pick_device, table, verdict, write_section
from bench.harness.synthetic import HEADS, LAYERS, attention, tokens
from viz_transformer.figures.attention import overview_figure
from viz_transformer.records.trace import Trace

RATIO = 1 / 3  # target: our payload <= 1/3 of bertviz's at the longest length
JS_DIR = ROOT / "artifacts" / "bench-js"
CDN = "https://cdnjs.cloudflare.com/ajax/libs/"
# bertviz's CDN URL -> (npm package@version, file inside the package tarball)
LIBS = {
    f"{CDN}require.js/2.3.6/require.min.js": ("requirejs@2.3.6", "package/require.js"),
    f"{CDN}d3/5.7.0/d3.min.js": ("d3@5.7.0", "package/dist/d3.min.js"),
    f"{CDN}jquery/2.0.0/jquery.min.js": ("jquery@2.1.0", "package/dist/jquery.min.js"),
}
# runs before bertviz's script: polls for every head's thumbnail (one <g> each in the SVG),
# then stamps the next painted frame in the page's clock
BERTVIZ_WATCH = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message)));
const timer = setInterval(() => {{
  const svg = document.querySelector("#vis svg");
  if (svg && svg.querySelectorAll(":scope > g").length >= {count}) {{
    clearInterval(timer);
    requestAnimationFrame(() => {{ window.__drawn = performance.now(); }});
  }}
}}, 20);
</script>"""


def timed(fn: object, runs: int) -> tuple[float, object]:
    """Median ms of ``runs`` calls of ``fn`` and its last result (big results are not kept)."""
    times, result = [], None
    for _ in range(runs):
        result = None  # let the previous payload go before building the next
        start = time.perf_counter()
        result = fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def js_libs() -> dict[str, Path]:
    """bertviz's CDN URLs -> local copies (fetched once with ``npm pack``)."""
    JS_DIR.mkdir(parents=True, exist_ok=True)
    local = {}
    for url, (package, member) in LIBS.items():
        path = JS_DIR / package / Path(member).name
        if not path.exists():
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run(["npm", "pack", package, "--pack-destination", tmp, "--silent"],
                               check=True, capture_output=True, timeout=300)  # fmt: skip
                (tgz,) = Path(tmp).glob("*.tgz")
                with tarfile.open(tgz) as tar:
                    data = tar.extractfile(member)
                    if data is None:
                        raise RuntimeError(f"{member} is not in {package}")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data.read())
        local[url] = path
    return local


def draw_bertviz(browser: Browser, html: str, libs: dict[str, Path], timeout_s: float) -> str:
    """Load bertviz's HTML in a fresh page (its CDN libraries served locally): drawn time in
    ms, or why it was not drawn."""
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "bertviz.html"
        with page_file.open("w") as f:
            f.write('<!doctype html><html><head><meta charset="utf-8"></head><body>')
            f.write(BERTVIZ_WATCH.format(count=LAYERS * HEADS))
            f.write(html)
            f.write("</body></html>")
        context = browser.new_context(viewport={"width": 1400, "height": 1200})

        def serve(route: Route) -> None:
            url = route.request.url
            if url in libs:
                route.fulfill(path=libs[url], content_type="application/javascript")
            elif url.startswith("file:"):
                route.continue_()
            else:
                route.abort()

        context.route("**/*", serve)
        page = context.new_page()
        crashed: list[str] = []  # a crash, an uncaught error or a console error, first first
        page.on("crash", lambda _: crashed.append("the tab crashed"))
        page.on("pageerror", lambda e: crashed.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and crashed.append(f"console: {m.text}"))
        try:
            page.goto(page_file.as_uri(), wait_until="commit", timeout=timeout_s * 1000)
            page.wait_for_function("() => window.__drawn", timeout=timeout_s * 1000)
            return f"{page.evaluate('() => window.__drawn'):.0f} ms"
        except PlaywrightError as exc:
            why = str(exc).splitlines()[0]
            if "Timeout" in type(exc).__name__ or "Timeout" in why:
                why = f"within {timeout_s:.0f} s"
            return f"not drawn {why}" + (f" ({crashed[0][:120]})" if crashed else "")
        finally:
            context.close()


def draw_ours(browser: Browser, figure_json: str, runs: int, timeout_s: float) -> str:
    """Our figure in the static plotly page: navigation -> painted (newPlot -> painted) in ms,
    medians of ``runs``, or why it was not drawn."""
    try:
        newplot, total = draw_plotly(browser, figure_json, runs, timeout_s)
    except (PlaywrightError, RuntimeError) as exc:
        why = str(exc).splitlines()[0]
        if "Timeout" in type(exc).__name__ or "Timeout" in why:
            why = f"within {timeout_s:.0f} s"
        return f"not drawn {why}"
    return f"{statistics.median(total):.0f} ms (newPlot {statistics.median(newplot):.0f} ms)"


def measure(n: int, runs: int, browser: Browser, libs: dict[str, Path], timeout_s: float) -> dict:
    """Both views of the same ``[6, 12, n, n]`` attention: build ms, payload bytes, drawn."""
    import torch
    from bertviz import model_view

    arr, toks = attention(n), tokens(n)
    trace = Trace(model_name=f"synthetic {LAYERS}x{HEADS}", src_tokens=tuple(toks),
                  tgt_tokens=(), pred_tokens=(), encoder=arr, decoder=None,
                  cross=None).validate()  # fmt: skip
    # bertviz's input: one [1, heads, n, n] tensor per layer (copies: the trace's are read-only)
    per_layer = tuple(torch.tensor(arr[layer][None]) for layer in range(LAYERS))
    runs = runs if n < 512 else 1  # a 512-token bertviz page takes tens of seconds to build
    ours_ms, figure_json = timed(lambda: overview_figure(trace, "encoder").to_json(), runs)
    bv_ms, html = timed(lambda: model_view(per_layer, toks, html_action="return").data, runs)
    row = {
        "n": n,
        "ours_ms": ours_ms,
        "ours_bytes": len(figure_json.encode()),
        "bv_ms": bv_ms,
        "bv_bytes": len(html.encode()),
    }
    print(f"{n} tokens: built ours {ours_ms:.0f} ms, {row['ours_bytes'] / 1e6:.1f} MB; bertviz "
          f"{bv_ms:.0f} ms, {row['bv_bytes'] / 1e6:.1f} MB; drawing...", flush=True)  # fmt: skip
    row["ours_drawn"] = draw_ours(browser, figure_json, 1 if n >= 256 else 3, timeout_s)
    del figure_json
    row["bv_drawn"] = draw_bertviz(browser, html, libs, timeout_s)
    print(f"  drawn: ours {row['ours_drawn']}, bertviz {row['bv_drawn']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="default: cuda when present, else cpu")
    parser.add_argument("--tokens", type=int, nargs="+", default=[64, 256, 512])
    parser.add_argument("--runs", type=int, default=3, help="builds per length (median; 1 at 512+)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for a drawing")
    args = parser.parse_args()
    device = pick_device(args.device)  # the tensors stay on the CPU: both tools take CPU arrays
    print(environment(device), flush=True)
    libs = js_libs()
    warm = Trace("warm-up", tuple(tokens(8)), (), (), attention(8), None, None)
    overview_figure(warm, "encoder").to_json()  # plotly's first figure loads its validators
    with sync_playwright() as p:
        browser = launch(p)
        try:
            rows = [measure(n, args.runs, browser, libs, args.timeout) for n in args.tokens]
            chromium = browser.version
        finally:
            browser.close()

    longest = max(rows, key=lambda r: r["n"])
    ratio = longest["ours_bytes"] / longest["bv_bytes"]
    drawable = all(not r["ours_drawn"].startswith("not") for r in rows
                   if r["bv_drawn"].startswith("not"))  # fmt: skip
    bv_fails = [r["n"] for r in rows if r["bv_drawn"].startswith("not")]
    data = [
        [r["n"], f"{r['ours_ms']:.0f}", f"{r['ours_bytes'] / 1e6:.2f}", r["ours_drawn"],
         f"{r['bv_ms']:.0f}", f"{r['bv_bytes'] / 1e6:.2f}", r["bv_drawn"],
         f"{r['ours_bytes'] / r['bv_bytes']:.2f}", f"{r['bv_ms'] / r['ours_ms']:.1f}"]
        for r in rows
    ]  # fmt: skip
    targets = [
        [f"our payload / bertviz's at {longest['n']} tokens", "<= 0.33", f"{ratio:.2f}",
         verdict(ratio, RATIO)],
        ["ours drawn where bertviz's is not", f"bertviz not drawn at: {bv_fails or 'none'}",
         "drawn" if drawable else "not drawn", "pass" if drawable and bv_fails else
         ("n/a: bertviz drew every length" if drawable else "miss")],
    ]  # fmt: skip
    body = f"""The same attention ({LAYERS} layers x {HEADS} heads, float32 softmax rows over random
scores with one pattern per head) at each length. Ours: `overview_figure(trace, "encoder")` +
`fig.to_json()`; bertviz 1.4.1: `model_view(attention, tokens, html_action="return")`. Build:
median of {args.runs} (one at 512 tokens and more). Drawn: headless Chromium {chromium}, navigation
start to painted (payload parsing included; plotly.js 4.8 MB and bertviz's require.js, d3 and
jquery served locally, their size not counted), timeout {args.timeout:.0f} s.

{table(["tokens", "ours: build ms", "ours: JSON MB", "ours: drawn", "bertviz: build ms",
        "bertviz: HTML MB", "bertviz: drawn", "payload ours/bertviz", "build bertviz/ours"],
       data)}

{table(["target", "limit", "measured", "verdict"], targets)}
"""  # fmt: skip
    write_section("bench_bertviz", "Against bertviz: build, payload, drawing", body, device)


if __name__ == "__main__":
    main()
