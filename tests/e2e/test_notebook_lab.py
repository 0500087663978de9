"""The quickstart notebook in a real JupyterLab on 127.0.0.1 and headless Chromium: it runs,
the head view draws, a click on a head reaches Python (the next cell reads it back), and no
request leaves the machine."""

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

pytestmark = [pytest.mark.needs("jupyterlab", "notebook"), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "docs" / "notebooks" / "quickstart.ipynb"


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
    return page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea").inner_text()


def test_the_quickstart_runs_and_a_clicked_head_reaches_python(lab: Lab, browser: Browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    watch = guard(context)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(lab.notebook_url(QUICKSTART.name))
    page.wait_for_function(READY_JS)
    page.evaluate(RUN_ALL_JS)
    head_view = page.locator(".vt-root.vt-head[data-drawn]")
    head_view.wait_for()
    assert head_view.get_attribute("data-selected") == "cross 0 0"
    assert head_view.locator("canvas.vt-lines").count() == 1
    assert head_view.locator(".vt-cell").count() == 2 * 4  # every head of the kind
    page.locator(".vt-root.vt-model[data-drawn][data-selected='encoder 1 3']").wait_for()
    page.locator(".js-plotly-plot .main-svg").nth(1).wait_for()  # plotly, offline
    selected = cell_index('print("selected:"')
    assert "selected: ('cross', 0, 0)" in output_of(page, selected)

    head_view.locator(".vt-cell[data-layer='1'][data-head='2']").click()
    page.locator(".vt-head[data-drawn][data-selected='cross 1 2']").wait_for()
    page.evaluate(RUN_CELL_JS, selected)
    page.wait_for_function(
        "([i, text]) => document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
        ".querySelector('.jp-OutputArea').innerText.includes(text)",
        arg=[selected, "selected: ('cross', 1, 2)"],
    )
    head_view.screenshot(path=str(ROOT / "artifacts" / "notebook-head-view.png"))
    assert watch.count > 50 and watch.outside == []
    context.close()
