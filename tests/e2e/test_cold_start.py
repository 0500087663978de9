"""The first visit after the server starts: the page's title and a note show at once, while
PyTorch and the model load, instead of a blank main area; both go once the page has drawn. A
teacher's first link of the day is rarely Home: every page's link, opened as a fresh server's
very first request, shows its title within 3 s."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

STARTING = re.compile("Starting: loading PyTorch and the model")
PAGES = {  # URL path -> the title app.py gives the page
    "attention_maps": "Attention maps",
    "positional_encoding": "Positional encoding",
    "softmax_saturation": "Softmax saturation",
    "decoder_steps": "Step-by-step decoder",
    "qkv_walkthrough": "Q, K, V walkthrough",
    "what_heads_do": "What heads do",
    "heads_across_corpus": "Heads across a corpus",
    "then_and_now": "2017 vs today",
    "watch_it_learn": "Watch it learn",
    "compare_models": "Compare two models",
}
FIRST_SCREEN_S = 3.0


def test_a_cold_first_visit_shows_the_page_title_then_the_page(browser, serve_app):
    with serve_app("test_cold_start") as url:  # a fresh server: nothing imported yet
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.goto(url, wait_until="domcontentloaded")
        # the skeleton: the page's title and the note, before the page's own code has run
        expect(page.get_by_text(STARTING)).to_be_visible(timeout=30_000)
        expect(page.locator("h1", has_text="Home")).to_be_visible()
        # then the page itself: its charts drawn, the skeleton gone, the page's one title left
        page.wait_for_selector(".js-plotly-plot .hm image", timeout=90_000)
        expect(page.get_by_text(STARTING)).to_have_count(0)
        expect(page.locator("h1", has_text="Home")).to_have_count(0)
        assert page.locator("h1").count() == 1
        page.close()


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PAGES))
def test_a_fresh_servers_first_request_for_any_page_shows_its_title_within_3_s(
    browser, serve_app, path
):
    with serve_app(f"test_cold_start-{path}") as url:  # this link is the server's first request
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        start = time.monotonic()
        page.goto(f"{url}/{path}", wait_until="domcontentloaded")
        title = page.locator("h1", has_text=PAGES[path])
        title.wait_for(timeout=30_000)
        waited = time.monotonic() - start
        expect(page.get_by_text(STARTING)).to_be_visible()  # the skeleton, not the page itself
        assert waited < FIRST_SCREEN_S, f"{path}: its title showed after {waited:.1f} s"
        page.close()
