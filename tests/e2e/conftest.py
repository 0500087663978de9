"""Fixtures of the browser tier: the real app under ``streamlit run`` on 127.0.0.1 and Debian's
headless Chromium driven by Playwright, with no network beyond loopback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported where used: without the browser this tier skips (tests/conftest.py)
    from playwright.sync_api import Browser, Page

from viz_transformer.serve.supervisor import healthy as answers_health
from viz_transformer.serve.supervisor import replica_states
from viz_transformer.testing import chromium as chromium_browser
from viz_transformer.testing.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def healthy() -> Callable[[str], bool]:
    """``healthy(url)``: whether a Streamlit server answers its health check at ``url``."""
    return answers_health


@contextlib.contextmanager
def serve(
    log_name: str,
    env: dict[str, str] | None = None,
    command: tuple[str, ...] = ("streamlit", "run", "app.py"),
    errors: Path | None = None,
) -> Iterator[str]:
    """``streamlit run app.py`` (or ``python -m`` another ``command`` given Streamlit's flags,
    such as ``("viz_transformer", "app")``) on a free loopback port, with ``env`` added to the
    environment; yields its URL. Its output goes to ``artifacts/<log_name>-server.log`` (a pipe
    nobody reads could fill up and stall it), its stderr to ``errors`` when given; it is stopped
    afterwards, killed if it does not stop."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = ROOT / "artifacts" / f"{log_name}-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    flags = {"server.port": port, "server.address": "127.0.0.1", "server.headless": "true",
             "browser.gatherUsageStats": "false"}  # fmt: skip
    args = [f"--{k}={v}" for k, v in flags.items()]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    with log.open("wb") as out:
        cmd = [sys.executable, "-m", *command, *args]
        err = errors.open("wb") if errors else None
        stderr = err or subprocess.STDOUT
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=stderr)
        try:
            deadline = time.monotonic() + 60
            while not answers_health(url):
                assert proc.poll() is None and time.monotonic() < deadline, f"no server; see {log}"
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
            proc.kill()  # does nothing when it has stopped
            proc.wait(timeout=15)
            if err:
                err.close()


@pytest.fixture(scope="session")
def serve_app() -> Callable[..., contextlib.AbstractContextManager[str]]:
    """``with serve_app(log_name, env) as url``: another server (``serve``), e.g. with its own
    ``VT_CACHE_DIR``."""
    return serve


@dataclass
class Replicas:
    """``python -m viz_transformer serve`` running: its front URL, run folder and process."""

    url: str
    run_dir: Path
    proc: subprocess.Popen[bytes]

    def children(self) -> dict[str, int]:
        """Each replica's name (``r1``, ``r2``) and pid, as ``serve`` records them."""
        state = json.loads((self.run_dir / "replicas.json").read_text())
        return {name: child["pid"] for name, child in state.items()}

    def states(self) -> dict[str, str]:
        """Each replica's state in HAProxy (``UP``, ``DOWN``, ...)."""
        return replica_states(self.run_dir / "haproxy.sock")


@contextlib.contextmanager
def replicas(
    log_name: str, run_dir: Path, env: dict[str, str] | None = None, count: int = 2
) -> Iterator[Replicas]:
    """``serve --replicas count`` behind HAProxy on a free port, with ``env`` added, until every
    replica is healthy; output to ``artifacts/<log_name>.log``; killed afterwards if running."""
    port = free_port()
    log = ROOT / "artifacts" / f"{log_name}.log"
    log.parent.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "viz_transformer", "serve", "--replicas", str(count), "--port",
           str(port), "--run-dir", str(run_dir)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while "healthy behind HAProxy" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        assert f"http://127.0.0.1:{port}" in log.read_text()  # the front URL, printed
        yield Replicas(f"http://127.0.0.1:{port}", run_dir, proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def serve_replicas() -> Callable[..., contextlib.AbstractContextManager[Replicas]]:
    """``with serve_replicas(log_name, run_dir, env) as room``: replicas behind HAProxy
    (``room.url``, ``room.children()``, ``room.states()``)."""
    return replicas


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The app served for the module (``serve``, log named after the module); yields its URL."""
    with serve(request.module.__name__.rsplit(".", 1)[-1]) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium for the module."""
    assert Path(chromium_browser.CHROMIUM).exists(), chromium_browser.MISSING
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = chromium_browser.launch(p)
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


# Every text of every drawn plotly chart as a rotated rectangle in page pixels (from getBBox and
# the text's screen transform), with the chart's box and each subplot's plot area.
_CHART_TEXTS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd, chart) => {
  const svg = gd.querySelector('svg.main-svg'); const box = gd.getBoundingClientRect();
  if (!svg || box.width === 0 || !gd._fullLayout) return null;
  const origin = svg.getBoundingClientRect();
  const areas = Object.entries(gd._fullLayout._plots || {}).map(([id, p]) => ({id,
    x: origin.left + p.xaxis._offset, y: origin.top + p.yaxis._offset,
    w: p.xaxis._length, h: p.yaxis._length}));
  const texts = [];
  gd.querySelectorAll('svg text').forEach((t) => {
    const style = getComputedStyle(t);
    if (t.closest('.hoverlayer') || style.display === 'none' || style.visibility === 'hidden'
        || Number(style.opacity) === 0 || !t.textContent.trim()) return;
    const b = t.getBBox(); if (b.width === 0 || b.height === 0) return;
    const m = t.getScreenCTM();
    // the em box of each line (the box getBBox gives adds the font's line gap above and below)
    const size = parseFloat(style.fontSize);
    const lines = Math.max(1, Math.round(b.height / (1.3 * size)));
    const top = b.y + (b.height - lines * size) / 2; const h = lines * size;
    const corners = [[b.x, top], [b.x + b.width, top], [b.x + b.width, top + h],
                     [b.x, top + h]].map(([x, y]) => [m.a * x + m.c * y + m.e,
                                                      m.b * x + m.d * y + m.f]);
    const sub = t.closest('g.subplot'); const tick = t.closest('g.xtick, g.ytick');
    texts.push({text: t.textContent.slice(0, 40), corners,
      px: size * Math.hypot(m.a, m.b),
      tickOf: tick && sub ? [...sub.classList].find((c) => c !== 'subplot') : null});
  });
  const t = gd.layout.title;
  return {chart, title: (t && (t.text || t)) || gd.layout.meta?.title || '',
          box: {x: box.left, y: box.top, w: box.width, h: box.height}, areas, texts};
}).filter(Boolean)"""
MIN_TEXT_PX = 8.0  # no chart text smaller than this on the screen


def _separated(p: list[list[float]], q: list[list[float]], slack: float) -> bool:
    """Whether two convex quadrilaterals are apart (by the separating axis theorem), allowing
    ``slack`` pixels of overlap (antialiased edges of neighbouring labels)."""
    for poly in (p, q):
        for i in range(4):
            (x1, y1), (x2, y2) = poly[i], poly[(i + 1) % 4]
            nx, ny = y2 - y1, x1 - x2
            norm = (nx * nx + ny * ny) ** 0.5 or 1.0
            a = [(x * nx + y * ny) / norm for x, y in p]
            b = [(x * nx + y * ny) / norm for x, y in q]
            if max(a) <= min(b) + slack or max(b) <= min(a) + slack:
                return True
    return False


def _rect(x: float, y: float, w: float, h: float) -> list[list[float]]:
    return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]


def _chart_problems(page: Page, slack: float = 1.0) -> list[str]:
    """What makes the drawn charts of ``page`` unreadable, measured on the SVG text elements'
    real (rotated) boxes: a text under ``MIN_TEXT_PX`` tall, two texts of one chart that
    overlap, a tick label over another subplot's map, a text outside its chart's box. Empty when
    every chart is readable; each entry names the chart (its title) and the texts."""
    problems = []
    for chart in page.evaluate(_CHART_TEXTS_JS):
        name = f"chart {chart['chart']} ({str(chart['title'])[:50]!r})"
        texts, box = chart["texts"], chart["box"]
        outer = _rect(
            box["x"] - slack, box["y"] - slack, box["w"] + 2 * slack, box["h"] + 2 * slack
        )
        for t in texts:
            if t["px"] < MIN_TEXT_PX:
                problems.append(f"{name}: {t['text']!r} is {t['px']:.1f} px tall")
            xs, ys = [c[0] for c in t["corners"]], [c[1] for c in t["corners"]]
            if (
                min(xs) < outer[0][0]
                or min(ys) < outer[0][1]
                or max(xs) > outer[2][0]
                or max(ys) > outer[2][1]
            ):
                problems.append(f"{name}: {t['text']!r} lies outside the chart")
            for area in chart["areas"]:
                if t["tickOf"] and t["tickOf"] != area["id"]:
                    plot = _rect(area["x"], area["y"], area["w"], area["h"])
                    if not _separated(t["corners"], plot, slack):
                        problems.append(f"{name}: tick {t['text']!r} lies on map {area['id']}")
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                if not _separated(a["corners"], b["corners"], slack):
                    problems.append(f"{name}: {a['text']!r} overlaps {b['text']!r}")
    return problems


@pytest.fixture(scope="session")
def chart_problems() -> Callable[..., list[str]]:
    """``chart_problems(page)``: what makes the charts drawn on ``page`` unreadable (text under
    8 px, overlapping texts, a tick label over another map, text outside its chart; see
    ``_chart_problems``), empty when nothing does. Every page's readability test uses it."""
    return _chart_problems


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run in the order their files define them, after pytest-randomly has
    shuffled the rest: a module's tests share one server and its sessions (a test that stops
    the server, as test_serve's SIGTERM test does, is written last), so their order is part of
    what they test. The other tiers keep their random order."""
    here = Path(__file__).resolve().parent
    modules: dict[str, list[int]] = {}  # a module's places in the run, kept (its block)
    for i, item in enumerate(items):
        if here in Path(str(item.path)).resolve().parents:
            modules.setdefault(str(item.path), []).append(i)
    for slots in modules.values():
        ordered = sorted((items[i] for i in slots), key=lambda it: it.location[1])
        for slot, item in zip(slots, ordered, strict=True):
            items[slot] = item
