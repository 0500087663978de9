"""What the browser tests share: a fresh page per test, waiting for a script run to end, the
figures a page drew, its text."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from playwright.sync_api import Browser, Page

PLOT = ".js-plotly-plot .main-svg"
# every figure drawn, as JSON (typed arrays as lists, NaN as null), in page order: two views are
# the same when these strings are
FIGURES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(el => JSON.stringify(
    {data: el.data, title: el.layout.title, x: el.layout.xaxis, y: el.layout.yaxis},
    (k, v) => ArrayBuffer.isView(v) ? Array.from(v) : v))"""


@contextlib.contextmanager
def fresh_page(browser: Browser, width: int, height: int) -> Iterator[Page]:
    """A page in a new browser context (a new Streamlit session), downloads allowed."""
    viewport = {"width": width, "height": height}
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        yield page
    finally:
        context.close()


def settle(page: Page) -> None:
    """Wait until the script run ends (the status widget leaves) and no exception shows.

    A rerun may start later than the 400 ms waited here: check a value a rerun writes with
    Playwright's ``expect``, which retries, not with a plain read after this."""
    page.wait_for_timeout(400)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    assert page.locator('[data-testid="stException"]').count() == 0


def page_text(page: Page) -> str:
    """The page's visible text."""
    return page.locator("body").inner_text()
