"""Issue 28 in the browser: a lecture on a projector (1024x768, presenter mode) and on a student
laptop (1366x768). Titles stay inside their charts, labels apart, the decoder's controls on
screen after scrolling, and no request leaves the server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.slow

SCREENS = {"projector": (1024, 768, "?presenter=True"), "laptop": (1366, 768, "")}

# every drawn chart: its title inside its width, its colour-bar ticks inside, its x tick labels
# apart (neighbouring labels of one axis do not overlap)
FIT = """() => {
  const bad = [];
  const inside = (r, box) => r.left >= box.left - 1 && r.right <= box.right + 1;
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const box = plot.querySelector('.main-svg').getBoundingClientRect();
    if (box.width === 0) continue;  // a chart in a closed tab
    const title = plot.querySelector('.gtitle');
    if (title && title.textContent && !inside(title.getBoundingClientRect(), box))
      bad.push('title outside: ' + title.textContent);
    for (const t of plot.querySelectorAll('.cbaxis text'))
      if (!inside(t.getBoundingClientRect(), box)) bad.push('colour-bar tick: ' + t.textContent);
    for (const axis of plot.querySelectorAll('.xaxislayer-above')) {
      const r = [...axis.querySelectorAll('.xtick text')].map(t => t.getBoundingClientRect())
        .filter(b => b.width > 0).sort((a, b) => a.left - b.left);
      for (let i = 1; i < r.length; i++)
        // a label's box holds its line height: glyphs overlap once boxes do by 30 %
        if (r[i - 1].right - r[i].left > 0.3 * r[i].width && r[i].top < r[i - 1].bottom - 2 &&
            r[i - 1].top < r[i].bottom - 2) bad.push('x labels overlap: ' + axis.textContent);
    }
  }
  return bad;
}"""


@pytest.fixture(scope="module", params=list(SCREENS))
def screen(request: pytest.FixtureRequest, server: str, browser: Browser) -> Iterator[tuple]:
    """A fresh session at one screen size; yields (page, query string, URL of the server)."""
    width, height, query = SCREENS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(120_000)
    yield page, query, server
    context.close()


def _visit(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    page.wait_for_timeout(500)  # plotly lays out labels after the first paint
    assert page.locator('[data-testid="stException"]').count() == 0


def test_no_request_leaves_the_server(screen):
    """The favicon and every asset come from the app: a classroom network sees no request."""
    page, query, url = screen
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    for path in ("", "attention_maps", "decoder_steps"):
        _visit(page, f"{url}/{path}{query}")
    outside = [u for u in requested if not u.startswith(url) and not u.startswith("data:")]
    assert requested and outside == []
    icon = page.evaluate("() => document.querySelector('link[rel*=icon]').href")
    assert icon.startswith(url), icon


def test_home_titles_inside_and_labels_apart(screen):
    page, query, url = screen
    _visit(page, f"{url}/{query}")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3")
    page.wait_for_timeout(500)
    assert page.evaluate(FIT) == []
    for title in ("encoder self-attention", "decoder masked self-attention", "(cross)"):
        box = page.get_by_text(title).first.bounding_box()
        assert box and box["x"] + box["width"] <= page.viewport_size["width"], title


def test_decoder_controls_stay_on_screen_after_scrolling(screen):
    page, query, url = screen
    _visit(page, f"{url}/decoder_steps{query}")
    page.mouse.move(700, 500)
    for _ in range(8):  # down to the next-token bars, far below the controls
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(100)
    page.get_by_text("Teacher forcing").wait_for()
    assert page.get_by_text("Teacher forcing").bounding_box()["y"] < 768
    for name in ("Back", "Next"):
        box = page.get_by_role("button", name=name, exact=True).bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= 768, (name, box)
    page.get_by_role("button", name="Next", exact=True).click()
    page.get_by_text("Decoder input at step 1").wait_for()


def test_watch_it_learn_reads_at_1024(screen):
    """The twin toggle's label whole, the live maps' titles inside and their key labels apart."""
    page, query, url = screen
    page.goto(f"{url}/watch_it_learn{query}")
    toggle = page.get_by_text("Also train without 1/√d_k")
    toggle.wait_for()
    assert toggle.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    slider = page.get_by_role("slider").first
    slider.focus()
    page.keyboard.press("Home")  # the shortest run: 10 s
    page.get_by_role("button", name="Start training").click()
    page.get_by_text("the model now says").first.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length >= 3")
    page.wait_for_timeout(1000)
    assert page.evaluate(FIT) == []
    page.get_by_text("Finished: reverse").wait_for(timeout=60_000)
