"""The one headless Chromium the browser tests (tests/e2e) and the benchmarks (bench/) drive:
Debian's ``chromium``, with no network beyond loopback (``launch``); a page in a fresh context
of its own (``fresh_page``); and the script that records every state a page of the app passes
through (``WATCH_STATES``). Playwright is imported by the caller."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
# an init script: ``window.vtStates`` gets ``[milliseconds since navigation, "Starting" note
# shown, [h1 texts]]`` at every change of the page, watched from the first byte by a
# MutationObserver, so no state is missed between two polls
WATCH_STATES = """
window.vtStates = [];
let last = "";
new MutationObserver(() => {
  const note = (document.body?.textContent ?? "").includes("Starting: loading PyTorch");
  const titles = [...document.querySelectorAll("h1")].map((h) => h.textContent.trim());
  const state = JSON.stringify([note, titles]);
  if (state !== last) { window.vtStates.push([performance.now(), note, titles]); last = state; }
}).observe(document, { childList: true, subtree: true, characterData: true });
"""
MISSING = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"


def launch(p: Playwright) -> Browser:
    """Debian's headless Chromium through Playwright ``p``; a RuntimeError says how to install
    it when it is missing."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(MISSING)
    return p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@contextmanager
def fresh_page(browser: Browser, width: int, height: int, timeout_ms: float) -> Iterator[Page]:
    """A page in a new context (a new session: no cookies, no cache) of ``width`` x ``height``
    whose waits time out after ``timeout_ms``; the context is closed on leaving."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.set_default_timeout(timeout_ms)
        yield page
    finally:
        context.close()
