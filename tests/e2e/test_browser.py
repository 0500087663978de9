"""The real thing: ``streamlit run app.py`` on 127.0.0.1, driven by headless Chromium (Playwright).

Screenshots go to ``artifacts/screenshots/`` (kept out of git) for a person to look at.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
CHART = ".js-plotly-plot .hm image"  # a heatmap drawn by plotly.js

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("streamlit did not answer /_stcore/health within 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[Page]:
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 2400})
        pg.set_default_timeout(60_000)
        pg.goto(server)
        yield pg
        browser.close()


def _no_exception(page: Page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def test_first_visit_draws_real_attention_maps(page: Page):
    page.wait_for_selector(CHART)
    page.wait_for_timeout(500)
    assert page.locator(".js-plotly-plot").count() >= 2
    assert "A comissão" in page.content() or "acordo" in page.content()
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "attention-default.png"), full_page=True)


def test_typing_a_sentence_redraws_with_its_tokens(page: Page):
    box = page.locator("textarea").first
    box.fill("Where is the train station?")
    box.press("Control+Enter")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some("
        "p => p.textContent.includes('station'))"
    )
    page.wait_for_selector(CHART)
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "attention-typed.png"), full_page=True)


def test_a_paper_model_shows_the_masked_decoder(page: Page):
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.keyboard.type("paper-sov")
    page.keyboard.press("Enter")
    page.get_by_text("does not know").wait_for()  # the typed English sentence is kept
    page.get_by_role("button", name="Use the example").click()
    try:
        page.wait_for_function("() => document.body.innerText.includes('gabrin')")
    finally:
        page.screenshot(path=str(SHOTS / "attention-paper.png"), full_page=True)
    page.get_by_text("Decoder masked self-attention").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.gtitle')].some("
        "t => t.textContent.includes('Decoder masked self-attention, layer'))"
    )
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "attention-paper-decoder.png"), full_page=True)
