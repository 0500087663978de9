"""Fixtures of the browser tier: the real app under ``streamlit run`` on 127.0.0.1 and Debian's
headless Chromium driven by Playwright, with no network beyond loopback."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip


def _answers(url: str) -> bool:
    try:
        return urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok"
    except OSError:
        return False


@pytest.fixture(scope="session")
def healthy() -> Callable[[str], bool]:
    """``healthy(url)``: whether a Streamlit server answers its health check at ``url``."""
    return _answers


@contextlib.contextmanager
def serve(log_name: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port, with ``env`` added to the environment;
    yields its URL. Its output goes to ``artifacts/<log_name>-server.log`` (a pipe nobody reads
    could fill up and stall it); it is stopped afterwards, killed if it does not stop."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = ROOT / "artifacts" / f"{log_name}-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    flags = {"server.port": port, "server.address": "127.0.0.1", "server.headless": "true",
             "browser.gatherUsageStats": "false"}  # fmt: skip
    args = [f"--{k}={v}" for k, v in flags.items()]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    with log.open("wb") as out:
        cmd = [sys.executable, "-m", "streamlit", "run", "app.py", *args]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while not _answers(url):
                assert proc.poll() is None and time.monotonic() < deadline, f"no server; see {log}"
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            proc.kill()  # does nothing when it has stopped
            proc.wait(timeout=15)


@pytest.fixture(scope="session")
def serve_app() -> Callable[..., contextlib.AbstractContextManager[str]]:
    """``with serve_app(log_name, env) as url``: another server (``serve``), e.g. with its own
    ``VT_CACHE_DIR``."""
    return serve


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The app served for the module (``serve``, log named after the module); yields its URL."""
    with serve(request.module.__name__.rsplit(".", 1)[-1]) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium for the module."""
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (a new session) per test, 1400x1000; a module that needs another
    screen or one page for all its tests defines its own ``page``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    yield pg
    context.close()
