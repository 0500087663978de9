"""Retrieval heads in a real browser on the planted tiny Llama: a flagged head's "Map at the
needle" is a real link that opens a new tab on that head's map zoomed on the needle (the view in
its URL), scrolled into view, with the sidebar's sentence untouched in both tabs, and the server
logs no warning on the way."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

from playwright.sync_api import Browser, Page

from viz_transformer.testing.planted import NEEDLE, build_planted, haystack

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "artifacts" / "test_retrieval_browser-server.log"
IN_VIEW = """name => {
  const box = document.querySelector('.st-key-vt-focus-' + name);
  if (!box) return false;
  const r = box.getBoundingClientRect();
  return r.top > -2 && r.top < window.innerHeight / 2;  // its top in the upper half
}"""


def _settled(page: Page) -> None:
    page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


def test_a_head_link_opens_its_zoomed_map_in_a_new_tab(
    server: str, browser: Browser, tmp_path: Path
) -> None:
    model = f"hf:{build_planted(tmp_path / 'planted')}"
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{server}/what_heads_do?model={quote(model)}")
    _settled(page)
    sentence = page.get_by_label("Sentence", exact=True).input_value()
    page.get_by_text("Paste", exact=True).click()
    page.get_by_label("Paste a long text").fill(haystack(60))
    page.get_by_label("Paste a long text").press("Tab")  # a text area commits on blur
    page.get_by_label("Needle (a sentence to hide)").fill(NEEDLE)
    page.get_by_label("Needle (a sentence to hide)").press("Enter")
    page.get_by_role("button", name="Find retrieval heads").click()
    link = page.get_by_role("link", name=re.compile("Map at the needle"))
    link.wait_for()
    with context.expect_page() as opened:
        link.click()
    tab = opened.value
    tab.set_default_timeout(120_000)
    _settled(tab)
    tab.get_by_text("Showing a retrieval run's prompt + output").wait_for()
    view = dict(parse_qsl(urlsplit(tab.url).query))
    assert urlsplit(tab.url).path.endswith("/attention_maps")
    assert (view["layer"], view["head"], view["zoom"], view["zoom_size"]) == (
        "1",
        "2",
        "True",
        "32",
    )
    assert view["ret_run"].endswith("|0.5|0|copy|" + NEEDLE)
    tab.locator(".js-plotly-plot").filter(has_text="queries 362-381, keys 172-203").wait_for()
    tab.wait_for_function(IN_VIEW, arg="head-map")  # the zoomed head, scrolled to
    assert tab.get_by_label("Sentence", exact=True).input_value() == sentence
    assert page.get_by_label("Sentence", exact=True).input_value() == sentence  # the first tab
    assert tab.get_by_text("sentences. The models were trained").count() == 0
    context.close()
    log = LOG.read_text(errors="replace")
    assert "Session State API" not in log and "Traceback" not in log, log[-3000:]


def test_the_sweep_picture_is_readable_and_its_cells_are_links(
    server: str, browser: Browser, chart_problems, tmp_path: Path
) -> None:
    """Five depths x two prompt lengths at 1366x768: the picture's texts readable, and a cell's
    number opens that run's map of that head in a new tab."""
    model = f"hf:{build_planted(tmp_path / 'planted')}"
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{server}/what_heads_do?model={quote(model)}")
    _settled(page)
    page.get_by_text("Paste", exact=True).click()
    page.get_by_label("Paste a long text").fill(haystack(60, seed=1))
    page.get_by_label("Paste a long text").press("Tab")
    page.get_by_label("Needle (a sentence to hide)").fill(NEEDLE)
    page.get_by_label("Needle (a sentence to hide)").press("Enter")
    page.get_by_text("Sweep needle depths × prompt lengths").click()
    page.get_by_role("button", name="Find retrieval heads").click()
    picture = page.locator(".js-plotly-plot").filter(has_text="most often retrieving")
    picture.wait_for()
    _settled(page)
    picture.scroll_into_view_if_needed()
    page.wait_for_timeout(500)  # plotly's last relayout
    index = page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')]
             .findIndex((g) => (g.layout.title.text || '').includes('most often retrieving'))"""
    )
    problems = [p for p in chart_problems(page) if int(p.split()[1]) == index]
    assert not problems, "\n".join(problems)
    cell = picture.locator(".annotation-text a").first
    with context.expect_page() as opened:
        cell.click(force=True)  # at its place: the box of the same link lies on top
    tab = opened.value
    tab.set_default_timeout(120_000)
    _settled(tab)
    view = dict(parse_qsl(urlsplit(tab.url).query))
    assert (view["layer"], view["head"]) == ("1", "2") and "|0.1|256|copy|" in view["ret_run"]
    tab.locator(".js-plotly-plot").filter(has_text="layer 1, head 2").first.wait_for()
    context.close()
