"""The Q, K, V walkthrough's why section in a real browser: clicking a cell of the score map picks
that query and key (the selectboxes and the view's URL follow) and the splits redraw for it."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import Page

from viz_transformer.testing.hf import BUILDERS

TITLE = "scores before the softmax"


def _drawn(page: Page) -> None:
    page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


def test_clicking_a_score_cell_picks_its_query_and_key(server: str, page: Page):
    page.goto(f"{server}/qkv_walkthrough?model=paper-reverse&kind=encoder&layer=1&head=2")
    _drawn(page)
    score_map = page.locator(".js-plotly-plot").filter(has_text=TITLE)
    score_map.scroll_into_view_if_needed()
    query, key = 2, 0
    index = page.evaluate(  # the clickable point of that cell (x = key, y = query)
        """([title, q, k]) => {
             const gd = [...document.querySelectorAll('.js-plotly-plot')]
               .find((g) => (g.layout.title.text || '').includes(title));
             const {x, y} = gd._fullData[1];  // decoded (data holds base64 arrays)
             return [...x].findIndex((kx, i) => kx === k && y[i] === q);
           }""",
        [TITLE, query, key],
    )
    assert index >= 0 and f"why_query={query}" not in page.url  # it starts at the token, 1
    point = score_map.locator(".scatterlayer .trace .points path").nth(index)
    point.click(force=True)
    page.wait_for_url(lambda url: f"why_query={query}" in url and f"why_key={key}" in url)
    _drawn(page)
    page.get_by_text("By input: token content and position").first.wait_for()


@pytest.mark.parametrize("family", ["paper", "gpt2"])
def test_the_why_charts_are_readable(server: str, browser, chart_problems, tmp_path, family):
    """At 1366x768: paper-en-pt's encoder (map, dimensions, input split) and a tiny GPT-2 (map,
    dimensions, input split, both component marginals and the top pairs)."""
    model, layer, charts = "paper-en-pt", 0, 5 + 3
    if family == "gpt2":
        model, layer, charts = f"hf:{BUILDERS['gpt2'](tmp_path / 'gpt2')}", 1, 5 + 5
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{server}/qkv_walkthrough?model={quote(model)}&layer={layer}")
    _drawn(page)
    page.wait_for_function(
        "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=charts
    )
    page.wait_for_timeout(500)  # plotly's last relayout (automargin)
    # the why section's charts: after the walkthrough's five steps
    problems = [p for p in chart_problems(page) if int(p.split()[1]) >= 5]
    context.close()
    assert not problems, "\n".join(problems)
