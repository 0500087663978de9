"""Charts readable on a projector: at 1024x768 in presenter mode and at 1366x768, no chart text
under 8 px tall, no two texts of one chart overlapping, no tick label over another map, every
text inside its chart (``chart_problems``, measured on the SVG text elements' boxes); in
presenter mode at 1024x768 the first chart starts on the first screen, Home's maps are at least
200 px wide and Compare's head-matching map keeps its texts 3 px apart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from viz_transformer.testing.chromium import fresh_page

SCREENS = {"1024-presenter": (1024, 768, True), "1366": (1366, 768, False)}
PAGES = {  # page and URL view -> how many charts it draws once done
    "home": ("", 6),  # two SVG layers a chart: its three maps
    "attention_maps": ("attention_maps", 6),
    "positional_encoding": ("positional_encoding", 15),
    "softmax_saturation": ("softmax_saturation", 15),
    "decoder_steps": ("decoder_steps", 9),
    "what_heads_do": ("what_heads_do", 30),
    "compare": ("compare_models?cmp_kind=cross", 2),
    "qkv_walkthrough": ("qkv_walkthrough", 5),
    "what_heads_do_smollm2": ("what_heads_do?model=smollm2", 36),
}
FIRST_SCREEN = ("home", "compare")  # pages whose first chart a lecture needs at once


@pytest.fixture(params=list(SCREENS))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[tuple[Page, bool]]:
    width, height, presenter = SCREENS[request.param]
    with fresh_page(browser, width, height, 120_000) as page:
        yield page, presenter


def _open(page: Page, url: str, charts: int) -> None:
    page.goto(url)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=charts
    )
    page.wait_for_timeout(500)  # plotly's last relayout (automargin) after the first draw


@pytest.mark.parametrize("name", list(PAGES))
def test_every_chart_is_readable(server: str, screen: tuple[Page, bool], name: str, chart_problems):
    page, presenter = screen
    path, charts = PAGES[name]
    _open(page, f"{server}/{path}{'&' if '?' in path else '?'}presenter={presenter}", charts)
    problems = chart_problems(page)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", FIRST_SCREEN)
def test_the_first_chart_starts_on_a_projectors_first_screen(server: str, browser: Browser, name):
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    page.set_default_timeout(120_000)
    path, charts = PAGES[name]
    _open(page, f"{server}/{path}{'&' if '?' in path else '?'}presenter=True", charts)
    top = page.locator(".js-plotly-plot").first.bounding_box()["y"]
    context.close()
    assert top < 768 - 150, f"the first chart starts at {top:.0f} px"  # some of it is seen


def test_home_and_compare_give_their_maps_room_on_a_projector(
    server: str, browser: Browser, chart_problems
):
    """At 1024x768 in presenter mode Home's three maps were a third of the page each, about
    100 px wide with their tokens edge to edge, and Compare's colour-bar title sat at the top of
    the head-matching map, 1 px above its first tick: now every Home map's plot area is at least
    200 px wide, and the head-matching map's texts stand 3 px apart and 3 px inside it."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    page.set_default_timeout(120_000)
    _open(page, f"{server}/?presenter=True", 6)
    widths = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g._fullLayout._size.w)"
    )
    _open(page, f"{server}/compare_models?cmp_kind=cross&presenter=True", 2)
    crowded = [p for p in chart_problems(page, slack=-3.0) if p.startswith("chart 0 ")]
    context.close()
    assert len(widths) == 3 and min(widths) >= 200, f"Home's maps are {widths} px wide"
    assert not crowded, "\n".join(crowded)


CELLS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(g => {
  const z = g.calcdata[0][0].z, x = g._fullLayout.xaxis, y = g._fullLayout.yaxis;
  return [(y._length / z.length) / (x._length / z[0].length), x._length, y._length];
})"""


@pytest.mark.parametrize("width", [1024, 1366])
def test_homes_maps_keep_square_cells_with_the_sidebar_open(server: str, browser: Browser, width):
    """At 1024 px with the sidebar open Home's three maps sat side by side in columns a third of
    the page wide and 330 px tall: their cells twice as tall as wide (issue 49). Each cell is now
    square (height over width within 10%), the maps stacked below each other when narrow, and a
    map is never under 200 px wide."""
    context = browser.new_context(viewport={"width": width, "height": 768})
    page = context.new_page()
    page.set_default_timeout(120_000)
    _open(page, server, 6)
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
    cells = page.evaluate(CELLS)
    context.close()
    assert sidebar and sidebar["width"] > 200 and sidebar["x"] >= 0, "the sidebar is open"
    assert len(cells) == 3
    assert all(0.9 <= ratio <= 1.1 for ratio, _, _ in cells), f"cell height/width: {cells}"
    assert all(w >= 200 for _, w, _ in cells), f"maps {cells} px wide"
