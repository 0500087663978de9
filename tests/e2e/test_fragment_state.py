"""A chart's own controls rerun only their part of the page (fragments: "Show the numbers", the
"Save figure" menu); the sidebar's model and typed sentence must still follow the user to the next
page (Streamlit dropped both on a page switch after a fragment's rerun)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Browser

pytestmark = pytest.mark.slow
SENTENCE = "the old farmers see a small cat"


def test_model_and_sentence_survive_a_fragment_rerun_and_a_page_switch(
    server: str, browser: Browser
):
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{server}/attention_maps")
        page.wait_for_selector(".js-plotly-plot")
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.keyboard.type("paper-sov")
        page.keyboard.press("Enter")
        page.wait_for_function("() => location.search.includes('model=paper-sov')")
        box = page.locator("textarea").first
        box.fill(SENTENCE)
        box.press("Control+Enter")
        page.wait_for_function("() => location.search.includes('sentence=the+old+farmers+see')")
        page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
        page.get_by_text("Show the numbers").first.click()  # the chart's fragment reruns
        page.get_by_role("button", name="Save figure").first.click()  # so does the menu's
        page.get_by_role("button", name="SVG", exact=True).first.wait_for()
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)
        page.locator('[data-testid="stSidebarNav"]').get_by_text(
            "Positional encoding", exact=True
        ).click()
        page.wait_for_function("() => location.pathname.endsWith('/positional_encoding')")
        page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
        page.wait_for_timeout(500)
        query = parse_qs(urlparse(page.url).query)
        assert query["model"] == ["paper-sov"] and query["sentence"] == [SENTENCE]
        assert page.locator("textarea").first.input_value() == SENTENCE
    finally:
        page.close()
