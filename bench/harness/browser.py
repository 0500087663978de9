"""The browser side of the benchmarks: Debian's headless Chromium (``launch``, the one the
browser tests use too: ``viz_transformer.testing.chromium``), a figure drawn by plotly.js in a
static page (``draw_plotly``), and a page of the app timed to what it waits for (``timed_visit``),
to its first chart (``visit``) or through the decoder's Next clicks (``next_clicks``)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import plotly
from playwright.sync_api import Browser, Page

from viz_transformer.testing.chromium import fresh_page, launch

__all__ = ["HEATMAP", "draw_plotly", "launch", "next_clicks", "plotly_page", "timed_visit", "visit"]

HEATMAP = ".js-plotly-plot .hm image"  # a heatmap drawn by plotly.js
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
# a static page: parse the figure, then time Plotly.newPlot until drawn and one frame painted
PLOTLY_HTML = """<!doctype html><html><head><meta charset="utf-8">
<script src="plotly.min.js"></script></head><body style="margin:0"><div id="fig"></div>
<script>
const fig = {figure};
const t0 = performance.now();
Plotly.newPlot("fig", fig.data, fig.layout, {{displaylogo: false}})
  .then(() => requestAnimationFrame(() => {{ window.__drawn = [t0, performance.now()]; }}))
  .catch(e => {{ window.__failed = String(e); }});
</script></body></html>"""


def plotly_page(figure_json: str, folder: Path) -> Path:
    """Write ``folder/figure.html`` drawing ``figure_json`` with a local copy of plotly.js."""
    js = folder / "plotly.min.js"
    if not js.exists():
        js.write_bytes(PLOTLY_JS.read_bytes())
    html = folder / "figure.html"
    # "</" inside a script would end it early (token labels may hold "</s>")
    html.write_text(PLOTLY_HTML.format(figure=figure_json.replace("</", "<\\/")))
    return html


def draw_plotly(
    browser: Browser, figure_json: str, runs: int, timeout_s: float = 60
) -> tuple[list[float], list[float]]:
    """Load a page drawing ``figure_json`` ``runs`` times in a fresh tab each.

    Returns:
        (newPlot -> drawn ms, navigation start -> drawn ms) per run; the second includes reading
        and parsing the HTML and plotly.js. Raises TimeoutError when a run does not draw in time.
    """
    newplot, total = [], []
    with tempfile.TemporaryDirectory() as tmp:
        html = plotly_page(figure_json, Path(tmp))
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            try:
                page.goto(html.as_uri(), wait_until="commit", timeout=timeout_s * 1000)
                page.wait_for_function(
                    "() => window.__drawn || window.__failed", timeout=timeout_s * 1000
                )
                failed = page.evaluate("() => window.__failed || null")
                if failed:
                    raise RuntimeError(f"Plotly.newPlot failed: {failed}")
                if not page.locator(HEATMAP).count():
                    raise RuntimeError("Plotly.newPlot resolved but no heatmap image was drawn")
                t0, t1 = page.evaluate("() => window.__drawn")
                newplot.append(t1 - t0)
                total.append(t1)
            finally:
                page.close()
    return newplot, total


def drawn(page: Page, home: bool) -> None:
    """Wait until the page has drawn its first chart (Home: its "is loaded on" line) and its run
    has finished."""
    if home:
        page.get_by_text("is loaded on").wait_for()
    else:
        page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


def timed_visit(
    browser: Browser, url: str, ready: Callable[[Page], object], width: int = 1024
) -> float:
    """Seconds from navigation to ``ready(page)`` returning, in a fresh context (a new session)
    ``width`` x 768."""
    with fresh_page(browser, width, 768, 180_000) as page:
        start = time.perf_counter()
        page.goto(url)
        ready(page)
        return time.perf_counter() - start


def visit(browser: Browser, url: str, home: bool) -> float:
    """Seconds from navigation to the first chart in a fresh context (a new session)."""
    return timed_visit(browser, url, lambda page: drawn(page, home))


def next_clicks(browser: Browser, url: str, clicks: int = 5) -> list[float]:
    """Seconds from each click on Next to the next step's line drawn."""
    with fresh_page(browser, 1024, 768, 180_000) as page:
        page.goto(url)
        drawn(page, False)
        seconds = []
        for step in range(1, clicks + 1):
            start = time.perf_counter()
            page.get_by_role("button", name="Next").click()
            page.get_by_text(f"Decoder input at step {step}").wait_for()
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
            seconds.append(time.perf_counter() - start)
        return seconds
