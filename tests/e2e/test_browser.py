"""The real thing: ``streamlit run app.py`` on 127.0.0.1, driven by headless Chromium (Playwright).

Screenshots go to ``artifacts/screenshots/`` (kept out of git) for a person to look at.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHART = ".js-plotly-plot .hm image"  # a heatmap drawn by plotly.js


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def page(server: str, browser: Browser) -> Iterator[Page]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg = browser.new_page(viewport={"width": 1400, "height": 2400})
    pg.set_default_timeout(60_000)
    pg.goto(server)
    yield pg
    pg.close()


def _no_exception(page: Page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def _open(page: Page, title: str) -> None:
    """Go to a page through the sidebar navigation (a click keeps the session's state)."""
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    page.wait_for_function(f"() => document.querySelector('h1')?.innerText.includes({title!r})")


def _charts_with(page: Page, text: str) -> None:
    page.wait_for_function(
        "t => [...document.querySelectorAll('.js-plotly-plot')]"
        ".some(p => p.textContent.includes(t))",
        arg=text,
    )


def _shot(page: Page, name: str) -> None:
    """Wait for the script run to finish (the status widget leaves), check, screenshot."""
    page.wait_for_timeout(300)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    _no_exception(page)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_home_names_the_model_and_device(page: Page):
    page.get_by_text("is loaded on").wait_for()
    assert "paper-en-pt" in page.content() and "cpu" in page.content()
    _shot(page, "0-home")


def test_attention_maps_draw_real_attention(page: Page):
    _open(page, "Attention maps")
    page.wait_for_selector(CHART)
    assert page.locator(".js-plotly-plot").count() >= 2
    assert "estudante" in page.content()  # "I am a student." -> "Eu sou um estudante."
    _shot(page, "1-attention-default")


def test_typing_a_sentence_redraws_with_its_tokens(page: Page):
    box = page.locator("textarea").first
    box.fill("Where is the train station?")
    box.press("Control+Enter")
    _charts_with(page, "station")
    page.wait_for_selector(CHART)
    _shot(page, "2-attention-typed")


def test_uploading_a_file_and_picking_a_line(page: Page):
    page.get_by_text("Sentences from a file").click()
    page.locator('input[type="file"]').set_input_files(
        files=[{"name": "s.txt", "mimeType": "text/plain",
                "buffer": b"The cat sleeps.\nI drink green tea every morning.\n"}]
    )  # fmt: skip
    page.get_by_text("Sentence (2 in the file)").wait_for()
    page.wait_for_timeout(1000)  # let the rerun that the upload started settle
    page.locator('[data-testid="stSelectbox"]').filter(has_text="in the file").click()
    page.get_by_role("option").filter(has_text="green tea").click()
    _charts_with(page, "tea")
    expect(page.locator("textarea").first).to_have_value("I drink green tea every morning.")
    _shot(page, "3-attention-uploaded")


def test_the_json_download_is_written_on_click_and_holds_the_view(page: Page):
    """Downloads are deferred (built on click, not on every rerun): the file must still come."""
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    with page.expect_download() as info:
        page.get_by_role("button", name="Data as JSON").click()
    data = json.loads(Path(info.value.path()).read_text())
    tokens = data["src_tokens"]
    assert any("tea" in t for t in tokens) and data["kind"] == "encoder"
    arr = np.array(data["encoder"], dtype=float)
    assert arr.shape[2:] == (len(tokens), len(tokens))
    np.testing.assert_allclose(arr.sum(-1), 1.0, atol=1e-5)


def test_a_figure_saves_as_svg_with_the_tokens_it_shows(page: Page):
    """The "Save figure" menu under a chart renders an SVG on the server on click (kaleido in
    Debian's Chromium, offline): a vector file with the chart's own title and labels."""
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    page.get_by_role("button", name="Save figure").first.click()
    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="SVG", exact=True).first.click()
    assert info.value.suggested_filename.endswith(".svg")
    svg = Path(info.value.path()).read_text()
    assert svg.lstrip().startswith("<svg")
    texts = set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert "Encoder self-attention: 6 layers x 8 heads" in texts  # the first chart, the overview
    assert {f"head {h}" for h in range(8)} <= texts and "<image" in svg  # the heads as an image
    page.keyboard.press("Escape")


def test_positional_encoding_page(page: Page):
    _open(page, "Positional encoding")
    page.wait_for_selector(CHART)
    _shot(page, "4-positional")


def test_softmax_saturation_page(page: Page):
    _open(page, "Softmax saturation")
    page.get_by_text("5. Training with and without the scale").wait_for()
    page.wait_for_selector(".js-plotly-plot")
    _shot(page, "5-softmax")


def test_step_by_step_decoder_steps(page: Page):
    _open(page, "Step-by-step decoder")
    page.get_by_text("Decoder input at step 0").wait_for()
    page.get_by_role("button", name="Next").click()
    page.get_by_text("Decoder input at step 1").wait_for()
    page.get_by_role("button", name="Next").click()
    page.get_by_text("Decoder input at step 2").wait_for()
    page.get_by_role("button", name="Back").click()
    page.get_by_text("Decoder input at step 1").wait_for()
    page.wait_for_selector(".js-plotly-plot")
    _shot(page, "6-decoder")


def test_qkv_walkthrough_page(page: Page):
    _open(page, "Q, K, V walkthrough")
    page.wait_for_selector(".js-plotly-plot")
    _shot(page, "7-qkv")


def test_a_paper_model_shows_the_masked_decoder(page: Page):
    _open(page, "Attention maps")
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.keyboard.type("paper-sov")
    page.keyboard.press("Enter")
    page.get_by_text("does not know").first.wait_for()  # the typed English sentence is kept
    page.get_by_role("button", name="Use the example").click()
    page.wait_for_function("() => document.body.innerText.includes('gabrin')")
    page.get_by_text("Decoder masked self-attention").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.gtitle')].some("
        "t => t.textContent.includes('Decoder masked self-attention, layer'))"
    )
    _shot(page, "8-attention-paper-decoder")


def test_a_phone_sized_window_and_a_shared_link(page: Page, server: str):
    """A narrow window opened on a teacher's link shows that view (a new session)."""
    narrow = page.context.browser.new_page(viewport={"width": 400, "height": 1400})
    narrow.set_default_timeout(60_000)
    try:
        narrow.goto(f"{server}/attention_maps?model=paper-dates&sentence=21/11/2026&kind=cross")
        narrow.wait_for_selector(CHART)
        narrow.wait_for_function("() => document.body.innerText.includes('2026-11-21')")
        assert "Encoder-decoder (cross) attention" in narrow.content()
        _shot(narrow, "9-narrow-shared-link")
    finally:
        narrow.close()
