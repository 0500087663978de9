"""Time to the first drawn chart of each page on a cold server, in the browser (issue 17).

Starts ``streamlit run app.py`` (``classroom_load.serve``), then for each page opens its URL in a
fresh browser context (a new session) and times navigation -> the first plotly chart drawn and
the script run finished (Home, which has no chart: -> the "is loaded on" line). The first visit of
each page is "cold" (the first page also loads the model); a second visit in another fresh context
is "warm". Then the decoder page's Next button, clicked five times (median: click -> next step
drawn). ``--presenter`` adds ``presenter=True`` to every URL (1024x768, as a projector).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ``python bench/first_chart.py``

from playwright.sync_api import Browser, Page, sync_playwright

import viz_transformer as vt
from bench.bench_views import launch
from bench.classroom_load import serve
from bench.common import ROOT, table, write_section
from pages.nav import table as page_table

# title -> URL path; the order a teacher opens them
PAGES = {
    page_table.title(stem): page_table.BY_STEM[stem].url_path
    for stem in (
        "home",
        "attention_maps",
        "positional_encoding",
        "softmax_saturation",
        "decoder_steps",
        "qkv_walkthrough",
    )
}
HEADER = [f"page (default model {vt.default_model()})", "cold s", "warm s",
          "issue 17 (cold / warm)"]  # fmt: skip
ISSUE = {"Home": (13.1, 2.1), "Attention maps": (6.2, 4.7), "Q, K, V walkthrough": (7.4, 8.1)}


def _drawn(page: Page, home: bool) -> None:
    if home:
        page.get_by_text("is loaded on").wait_for()
    else:
        page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


def visit(browser: Browser, url: str, home: bool) -> float:
    """Seconds from navigation to the first chart in a fresh context (a new session)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    page.set_default_timeout(180_000)
    try:
        start = time.perf_counter()
        page.goto(url)
        _drawn(page, home)
        return time.perf_counter() - start
    finally:
        context.close()


def next_clicks(browser: Browser, url: str, clicks: int = 5) -> list[float]:
    """Seconds from each click on Next to the next step's line drawn."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    page.set_default_timeout(180_000)
    try:
        page.goto(url)
        _drawn(page, False)
        seconds = []
        for step in range(1, clicks + 1):
            start = time.perf_counter()
            page.get_by_role("button", name="Next").click()
            page.get_by_text(f"Decoder input at step {step}").wait_for()
            page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
            seconds.append(time.perf_counter() - start)
        return seconds
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presenter", action="store_true", help="presenter mode in every URL")
    args = parser.parse_args()
    query = "?presenter=True" if args.presenter else ""
    rows, log = [], ROOT / "artifacts" / "first-chart-server.log"
    with serve(log) as url, sync_playwright() as p:
        browser = launch(p)
        try:
            urls = {t: f"{url}/{path}{query}" for t, path in PAGES.items()}
            cold = {t: visit(browser, u, t == "Home") for t, u in urls.items()}
            warm = {t: visit(browser, u, t == "Home") for t, u in urls.items()}
            steps = next_clicks(browser, f"{url}/decoder_steps{query}")
        finally:
            browser.close()
    for title in PAGES:
        before = ISSUE.get(title)
        was = f"{before[0]} / {before[1]}" if before else "-"
        rows.append([title, f"{cold[title]:.1f}", f"{warm[title]:.1f}", was])
    body = (
        table(HEADER, rows)
        + f"\n\nDecoder page, Next (click -> next step drawn), {len(steps)} clicks: median "
        f"{statistics.median(steps):.2f} s, max {max(steps):.2f} s (issue 17: 1.1-1.4 s).\n"
    )
    name = "first_chart_presenter" if args.presenter else "first_chart"
    title = "Time to the first chart per page, in the browser (issue 17)"
    write_section(name, title + (", presenter mode" if args.presenter else ""), body)


if __name__ == "__main__":
    main()
