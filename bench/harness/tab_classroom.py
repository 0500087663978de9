"""A classroom of browser tabs (``bench/classroom_load.py``'s engine): a ``Tab`` per session,
the ``WATCH`` script that stamps when a tab's chart shows its own sentence (and notes a
traceback or another tab's sentence), ``step``, ``wait_for_chart`` and ``check_tab``, and
``run_classroom``, which opens every tab in one Chromium and types in all at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, sync_playwright

from bench.harness.browser import HEATMAP, launch
from bench.harness.common import (
    classroom_sentences,
)
from bench.harness.stats import percentile

EXCEPTION = '[data-testid="stException"]'
# one marker word per tab: a single token of the EN->PT translator, never inside another marker,
# the templates, any tab's Portuguese output or the page's default example (checked once)
# installed in a tab just before its Enter: polls the page every 20 ms until a chart shows the
# tab's marker, stamping that moment in the page's clock; meanwhile notes any traceback and any
# other tab's marker, even one shown only for a moment
WATCH = """([mark, others]) => {
  const vt = window.__vt = {t0: performance.now(), t1: null, exception: false, foreign: []};
  const timer = setInterval(() => {
    vt.exception = vt.exception || document.querySelector('[data-testid="stException"]') !== null;
    const text = [...document.querySelectorAll('.js-plotly-plot')].map(p => p.textContent).join();
    vt.foreign.push(...others.filter(o => text.includes(o) && !vt.foreign.includes(o)));
    if (text.includes(mark)) {
      vt.t1 = performance.now();
      clearInterval(timer);
    }
  }, 20);
}"""
PLOTS_TEXT = "() => [...document.querySelectorAll('.js-plotly-plot')].map(p => p.textContent)"


def sentences(n: int) -> list[tuple[str, str]]:
    """``n`` different English sentences as (marker word, sentence)."""
    return classroom_sentences(n, "--tabs")


@dataclass
class Tab:
    """One student: the sentence typed, the seconds from Enter to its chart, what went wrong."""

    marker: str
    sentence: str
    seconds: float | None = None
    errors: list[str] = field(default_factory=list)


@dataclass
class Classroom:
    """The outcome of one run: every tab, the seconds until every tab drew its first maps."""

    tabs: list[Tab]
    first_paint: float
    browser: str

    @property
    def errors(self) -> list[str]:
        return [f"tab {i} ({t.marker}): {e}" for i, t in enumerate(self.tabs) for e in t.errors]

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile of the tabs' times (``inf`` for a tab that has none)."""
        return percentile((math.inf if t.seconds is None else t.seconds for t in self.tabs), q)


def run_classroom(url: str, n_tabs: int = 10, timeout: float = 180) -> Classroom:
    """Open ``n_tabs`` sessions on the Attention maps page, type in all, time each one's chart.

    Args:
        url: a running app (``serve``).
        n_tabs: how many tabs, each with its own browser context (its own Streamlit session).
        timeout: seconds for the whole run; a tab still waiting then counts a timeout.

    Returns:
        A ``Classroom`` with one ``Tab`` per sentence.
    """
    end = time.monotonic() + timeout
    tabs = [Tab(m, s) for m, s in sentences(n_tabs)]
    with sync_playwright() as p:
        browser = launch(p)
        try:
            pages = [browser.new_context(viewport={"width": 1400, "height": 1600}).new_page()
                     for _ in tabs]  # fmt: skip
            start = time.monotonic()
            for page, tab in zip(pages, tabs, strict=True):
                step(tab, lambda pg=page: pg.goto(f"{url}/attention_maps", wait_until="commit"))
            for page, tab in zip(pages, tabs, strict=True):
                step(tab, lambda pg=page: pg.wait_for_selector(HEATMAP, timeout=_ms(end)))
            first_paint = time.monotonic() - start
            for page, tab in zip(pages, tabs, strict=True):
                step(tab, lambda pg=page, t=tab: _type(pg, t, tabs))
            for page, tab in zip(pages, tabs, strict=True):
                step(tab, lambda pg=page, t=tab: wait_for_chart(pg, t, end))
            for page, tab in zip(pages, tabs, strict=True):
                step(tab, lambda pg=page, t=tab: check_tab(pg, t, tabs, end))
            return Classroom(tabs, first_paint, browser.version)
        finally:
            browser.close()


def _ms(end: float) -> float:
    return max(1.0, (end - time.monotonic()) * 1000)


def step(tab: Tab, action: Callable[[], object]) -> None:
    """Run one stage for a tab that has no error yet; a browser error becomes the tab's error."""
    if tab.errors:
        return
    try:
        action()
    except PlaywrightError as exc:
        kind = "timeout" if "Timeout" in type(exc).__name__ else "browser error"
        tab.errors.append(f"{kind}: {str(exc).splitlines()[0]}")


def _type(page: Page, tab: Tab, tabs: list[Tab]) -> None:
    box = page.locator("textarea").first
    box.fill(tab.sentence)
    page.evaluate(WATCH, [tab.marker, [t.marker for t in tabs if t is not tab]])
    box.press("Control+Enter")


def wait_for_chart(page: Page, tab: Tab, end: float) -> None:
    """Wait (until ``end``, a ``time.monotonic()``) for the tab's chart; store Enter -> chart."""
    page.wait_for_function("() => window.__vt.t1 !== null", timeout=_ms(end))
    t0, t1 = page.evaluate("() => [window.__vt.t0, window.__vt.t1]")
    tab.seconds = (t1 - t0) / 1000


def check_tab(page: Page, tab: Tab, tabs: list[Tab], end: float) -> None:
    """After the tab's run ends: no traceback ever, its marker shown, no other tab's marker."""
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached", timeout=_ms(end))
    if page.evaluate("() => window.__vt.exception") or page.locator(EXCEPTION).count():
        tab.errors.append("a traceback (stException) in the page")
    text = "\n".join(page.evaluate(PLOTS_TEXT))
    if tab.marker not in text:
        tab.errors.append("its own sentence is no longer in the charts")
    seen = set(page.evaluate("() => window.__vt.foreign"))  # while waiting for the chart
    foreign = [t.marker for t in tabs if t is not tab and (t.marker in text or t.marker in seen)]
    if foreign:
        tab.errors.append(f"charts show another tab's sentence: {foreign}")
