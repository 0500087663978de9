"""Seconds a fresh server's first request takes to show each page's title (the skeleton app.py
draws before PyTorch loads) and then the page itself (the "Starting" note gone), in the browser.

tests/e2e/test_cold_start.py checks the order of these states; the seconds are measured here, since
a busy machine stretches them. For each page (Home included) a new ``streamlit run app.py``
(``harness.server.serve``) gets that page's URL as its very first request, in headless Chromium; a
MutationObserver stamps every change of the page from navigation on (``performance.now()``), so
no state is missed between two polls. ``--rounds N``: N servers per page, the median reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ``python bench/cold_start.py``

from playwright.sync_api import Browser, sync_playwright

from bench.harness.browser import launch
from bench.harness.common import ROOT, table, write_section
from bench.harness.server import serve
from pages.nav import table as page_table
from viz_transformer.testing.chromium import WATCH_STATES

PAGES = {  # URL path -> the page's title: Home and the pages a lesson opens (not the class's two)
    entry.url_path: entry.title for entry in page_table.PAGES if not entry.group
}
NOTE = "Starting: loading PyTorch"


def first_request(browser: Browser, path: str, title: str) -> tuple[float, float]:
    """Seconds from navigation to the title and to the page (the note gone) on a new server."""
    log = ROOT / "artifacts" / "cold-start-server.log"
    with serve(log) as url:
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        page.set_default_timeout(180_000)
        page.add_init_script(WATCH_STATES)
        try:
            page.goto(f"{url}/{path}", wait_until="domcontentloaded")
            page.locator("h1", has_text=title).wait_for()
            page.get_by_text(NOTE).wait_for(state="detached")
            states = page.evaluate("window.vtStates")
        finally:
            page.close()
    shown = next(ms for ms, _, titles in states if any(title in t for t in titles))
    last_note = max(i for i, (_, note, _) in enumerate(states) if note)
    return shown / 1000, states[last_note + 1][0] / 1000  # the note gone: the page's own


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="servers per page (median)")
    parser.add_argument("--pages", nargs="*", help="URL paths to time (default: every page)")
    parser.add_argument("--no-write", action="store_true", help="print, leave the docs alone")
    args = parser.parse_args()
    pages = {path: PAGES[path] for path in (PAGES if args.pages is None else args.pages)}
    seconds: dict[str, list[tuple[float, float]]] = {path: [] for path in pages}
    with sync_playwright() as p:
        browser = launch(p)
        try:
            for _ in range(args.rounds):
                for path, title in pages.items():
                    seconds[path].append(first_request(browser, path, title))
                    print(f"{title}: {seconds[path][-1]}", flush=True)
        finally:
            browser.close()
    rows = [
        [title, *(f"{statistics.median(s[i] for s in seconds[path]):.1f}" for i in (0, 1))]
        for path, title in pages.items()
    ]
    load = os.getloadavg()[0]
    body = (
        table(["page (a fresh server's first request)", "title s", "page drawn s"], rows)
        + f"\n\nMedian of {args.rounds} server(s) per page; load average {load:.1f} at the end "
        "(other work on the machine stretches both columns). The title is the skeleton's, drawn "
        "before PyTorch and the model load; 'page drawn' is when the Starting note leaves.\n"
    )
    write_section(
        "cold_start",
        "A cold server's first page: title, then the page",
        body,
        write=not args.no_write,
    )


if __name__ == "__main__":
    main()
