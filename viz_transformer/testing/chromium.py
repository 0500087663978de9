"""The one headless Chromium the browser tests (tests/e2e) and the benchmarks (bench/) drive:
Debian's ``chromium``, with no network beyond loopback. Playwright is imported by the caller."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
MISSING = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"


def launch(p: Playwright) -> Browser:
    """Debian's headless Chromium through Playwright ``p``; a RuntimeError says how to install
    it when it is missing."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(MISSING)
    return p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
