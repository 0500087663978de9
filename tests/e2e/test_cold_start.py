"""The first visit after the server starts: the page's title and a note show at once, while
PyTorch and the model load, instead of a blank main area; both go once the page has drawn."""

from __future__ import annotations

import re

from playwright.sync_api import expect

STARTING = re.compile("Starting: loading PyTorch and the model")


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
