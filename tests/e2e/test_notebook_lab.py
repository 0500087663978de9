"""The quickstart notebook in a real JupyterLab on 127.0.0.1 and headless Chromium, with the
package as installed (no ``PYTHONPATH``): it runs, the head view draws, a click on a head reaches
Python (the next cell reads it back), the long input's view says what it shows, the query moves
by keyboard, axe-core finds no serious violation in the widgets, text keeps 4.5:1 in the light
and dark themes, the saved notebook reopened shows the static snapshot, and no request leaves
the machine."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from viz_transformer.testing.jupyter import (
    READY_JS,
    RUN_ALL_JS,
    RUN_CELL_JS,
    Lab,
    guard,
    temporary_lab,
)

pytestmark = [pytest.mark.needs("jupyterlab", "notebook", "axe"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "docs" / "notebooks" / "quickstart.ipynb"
AXE = ROOT / ".test-parts" / "axe-core-4.14.1" / "axe.min.js"
# every text element of the widgets: its colour against the background drawn behind it
CONTRAST_JS = """() => {
  const rgba = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => (v /= 255) <= 0.03928 ? v / 12.92
    : ((v + 0.055) / 1.055) ** 2.4).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const behind = (n) => { for (; n; n = n.parentElement) { const c = rgba(getComputedStyle(n)
    .backgroundColor); if (c.length && (c.length < 4 || c[3] > 0.5)) return c; }
    return [255, 255, 255]; };
  const out = [];
  for (const n of document.querySelectorAll('.vt-root *')) {
    const own = [...n.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || !n.offsetParent) continue;
    const s = getComputedStyle(n); const fg = rgba(s.color); const bg = behind(n);
    const a = fg.length > 3 ? fg[3] : 1;
    const mixed = fg.slice(0, 3).map((v, i) => v * a + bg[i] * (1 - a));
    const [l1, l2] = [lum(mixed), lum(bg)].sort((x, y) => y - x);
    out.push([n.className || n.tagName, n.textContent.slice(0, 20), (l1 + 0.05) / (l2 + 0.05)]);
  }
  return out; }"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    folder = tmp_path_factory.mktemp("lab")
    shutil.copy(QUICKSTART, folder)
    with temporary_lab(folder, ROOT / "artifacts" / "notebook-lab.log") as running:
        yield running


def cell_index(text: str) -> int:
    """The index of the quickstart's cell whose source contains ``text``."""
    cells = json.loads(QUICKSTART.read_text())["cells"]
    return next(i for i, c in enumerate(cells) if text in "".join(c["source"]))


def output_of(page: Page, index: int) -> str:
    """The text of a cell's outputs (``textContent``: JupyterLab skips rendering cells out of
    view, whose ``innerText`` is empty)."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    return cell.locator(".jp-OutputArea").text_content() or ""


def serious(page: Page) -> list[str]:
    """axe-core's critical and serious violations inside the widgets."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text())
    found = page.evaluate(
        "async () => (await axe.run({include: [['.vt-root']]}, {iframes: false})).violations"
    )
    return [f"{v['id']}: {n['target']}" for v in found if v["impact"] in ("critical", "serious")
            for n in v["nodes"]]  # fmt: skip


def low_contrast(page: Page) -> list:
    measured = page.evaluate(CONTRAST_JS)
    assert len(measured) > 50  # tokens, labels, notices
    return [m for m in measured if m[2] < 4.5]


def test_the_quickstart_runs_and_a_clicked_head_reaches_python(lab: Lab, browser: Browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = guard(context)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(lab.notebook_url(QUICKSTART.name))
    page.wait_for_function(READY_JS)
    page.evaluate(RUN_ALL_JS)
    head_view = page.locator(".vt-root.vt-head[data-drawn]").first
    head_view.wait_for()
    assert head_view.get_attribute("data-selected") == "cross 0 0"
    assert head_view.locator("canvas.vt-lines[role='img'][aria-label]").count() == 1
    assert head_view.locator(".vt-cell").count() == 2 * 4  # every head of the kind
    page.locator(".vt-root.vt-model[data-drawn][data-selected='encoder 1 3']").wait_for()
    page.locator(".js-plotly-plot .main-svg").nth(1).wait_for()  # plotly, offline
    selected = cell_index('print("selected:"')
    assert "selected: ('cross', 0, 0)" in output_of(page, selected)
    # the live widget hides its static snapshot
    assert page.locator(".jp-OutputArea-child:has([src*='vt-snap-'])").first.is_hidden()

    # the long input: the header says what it shows
    long_view = page.locator(".vt-root.vt-head[data-selected='encoder 0 0'][data-drawn]")
    long_view.wait_for()
    notice = long_view.locator(".vt-notice").inner_text()
    assert notice == "first 256 of 2,049 tokens: the model reads at most 256", notice

    # the query by keyboard: Tab reaches the first query token, arrows move, Enter selects
    head_view.scroll_into_view_if_needed()
    head_view.locator(".vt-qs .vt-tok").first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    head_view.locator(".vt-qs .vt-tok.vt-hot[data-row='2']").wait_for()  # focus highlights
    assert head_view.locator(".vt-tok.vt-hot").count() == 1
    page.keyboard.press("Enter")
    chosen = head_view.locator(".vt-qs .vt-tok[aria-selected='true']")
    chosen.wait_for()
    assert chosen.get_attribute("data-row") == "2"
    live = head_view.locator(".vt-live[aria-live='polite']").inner_text()
    assert live.startswith(f'selected query "{chosen.inner_text()}" (2), layer 0 head 0:'), live
    assert serious(page) == []
    assert low_contrast(page) == []

    head_view.locator(".vt-cell[data-layer='1'][data-head='2']").click()
    page.locator(".vt-head[data-drawn][data-selected='cross 1 2']").first.wait_for()
    page.evaluate(RUN_CELL_JS, selected)
    page.wait_for_function(
        "([i, text]) => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
        ".querySelector('.jp-OutputArea').textContent.includes(text)",
        arg=[selected, "selected: ('cross', 1, 2)"],
    )
    head_view.screenshot(path=str(ROOT / "artifacts" / "notebook-head-view.png"))

    # JupyterLab Dark: the widgets follow, and keep their contrast
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme', "
        "{theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(1500)
    background = page.evaluate(
        "() => getComputedStyle(document.querySelector('.vt-root')).backgroundColor"
    )
    assert sum(int(v) for v in background[4:-1].split(",")[:3]) < 3 * 80, background
    assert low_contrast(page) == []
    assert serious(page) == []
    head_view.screenshot(path=str(ROOT / "artifacts" / "notebook-head-view-dark.png"))

    # saved, then reopened in a new page with no kernel: the static snapshot of each view
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_timeout(1500)
    assert watch.count > 50 and watch.outside == []
    context.close()
    saved = json.loads((lab.folder / QUICKSTART.name).read_text())
    snaps = [o for c in saved["cells"] for o in c.get("outputs", [])
             if "image/svg+xml" in o.get("data", {})]  # fmt: skip
    first = "".join(snaps[0]["data"]["image/svg+xml"])  # the view as it was last: clicked
    assert len(snaps) == 3 and "(cross) attention, layer 1, head 2</text>" in first
    # the kernel gone (a live kernel would draw its widgets again on reopening: a race)
    assert lab.end_sessions() >= 1
    reopened = browser.new_context(viewport={"width": 1400, "height": 1000})
    guard(reopened)
    page = reopened.new_page()
    page.set_default_timeout(120_000)
    page.goto(lab.notebook_url(QUICKSTART.name))
    snap = ".jp-OutputArea-output :is(img[src*='vt-snap-'], svg[id^='vt-snap-'])"
    page.wait_for_function("(s) => document.querySelectorAll(s).length === 3", arg=snap)
    assert page.locator(snap).count() == 3 and page.locator(".vt-root").count() == 0
    reopened.close()
