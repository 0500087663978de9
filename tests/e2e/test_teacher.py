"""Issue 17, the teacher's first ten minutes, in a real browser: one test per item of the issue.

Each test opens the view it needs by its URL (a teacher's link) in Debian's Chromium; the
presenter-mode screenshots at 1024x768 go to ``artifacts/screenshots/presenter-*.png`` and the
measured step times to ``artifacts/teacher-timings.json`` (both kept out of git).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
PLOT = ".js-plotly-plot .main-svg"
PAGES = ("attention_maps", "positional_encoding", "softmax_saturation", "decoder_steps",
         "qkv_walkthrough")  # fmt: skip
# every figure drawn, as JSON (typed arrays as lists), in page order: two views are the same
# when these strings are
FIGURES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(el => JSON.stringify(
    {data: el.data, title: el.layout.title, x: el.layout.xaxis, y: el.layout.yaxis},
    (k, v) => ArrayBuffer.isView(v) ? Array.from(v) : v))"""

pytestmark = pytest.mark.slow


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (no shared session) at the issue's small screen, 1024x768."""
    context = browser.new_context(viewport={"width": 1024, "height": 768}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    context.close()


def _settle(page: Page) -> None:
    """Wait until the script run ends (the status widget leaves) and no exception shows.

    A rerun may start later than the 400 ms waited here: a value that a rerun writes is checked
    with Playwright's ``expect``, which retries, not with a plain read after this."""
    page.wait_for_timeout(400)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    assert page.locator('[data-testid="stException"]').count() == 0


def _goto(page: Page, server: str, path: str, **params: str) -> None:
    """Open ``path`` with the view ``params`` in the URL, as a shared link does."""
    page.goto(f"{server}/{path}?{urlencode(params)}" if params else f"{server}/{path}")
    page.wait_for_selector("h1")
    _settle(page)


def _figures(page: Page) -> list[str]:
    """The figures once the page is still (two reads a second apart agree, none stale)."""
    page.wait_for_selector(PLOT)
    _settle(page)
    before = None
    for _ in range(30):
        page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")
        now = page.evaluate(FIGURES_JS)
        if now == before:
            return now
        before = now
        page.wait_for_timeout(1000)
    raise AssertionError("the figures kept changing")


def _titles(page: Page) -> list[str]:
    """The figure titles in page order (SVG text has no innerText)."""
    return page.locator(".js-plotly-plot .gtitle").evaluate_all("ts => ts.map(t => t.textContent)")


def _text(page: Page) -> str:
    return page.locator("body").inner_text()


def test_1_picker_says_what_each_model_shows_and_a_switch_keeps_the_sentence(page, server):
    _goto(page, server, "attention_maps", model="bergamot-en-pt")  # no decoder self-attention
    sentence = page.locator("textarea").first.input_value()
    assert "Nearest model with decoder masked self-attention: paper-en-pt" in _text(page)
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    options = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    assert any(o.startswith("paper-en-pt · encoder-decoder: encoder self, decoder masked self, "
                            "cross attention; sinusoidal positions; English -> Portuguese")
               for o in options), options  # fmt: skip
    assert any(o.startswith("paper-reverse · ") and "task: reverse" in o for o in options)
    assert any(o.startswith("minilm · encoder-only: encoder self; learned") for o in options)
    page.get_by_role("button", name="Switch to paper-en-pt").click()
    page.get_by_text("Decoder masked self-attention", exact=True).wait_for()
    _settle(page)
    expect(page.locator("textarea").first).to_have_value(sentence)  # English: kept
    assert "model=paper-en-pt" in page.url


def _font_px(page: Page, selector: str) -> float:
    size = page.locator(selector).first.evaluate("t => getComputedStyle(t).fontSize")
    return float(size.removesuffix("px"))


@pytest.mark.parametrize("path", PAGES)
def test_2_presenter_mode_from_the_url_scales_every_figure_text_and_a_chart_is_on_screen(
    page, server, path
):
    _goto(page, server, path, presenter="True")
    page.wait_for_selector(PLOT)
    _settle(page)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"presenter-{path}.png"))  # the first screen only
    assert page.get_by_role("switch", name="Presenter mode").is_checked()
    plot = page.locator(".js-plotly-plot").first
    assert plot.bounding_box()["y"] < 768 - 150, "no chart on the first screen"
    assert _font_px(page, ".js-plotly-plot .xtick text") >= 18  # plotly's default is 12
    title = page.locator(".js-plotly-plot .gtitle").first
    if title.count():
        box, frame = title.bounding_box(), plot.bounding_box()
        assert (
            box["x"] >= frame["x"] - 1
            and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
        )


def test_3_decoder_controls_stay_beside_the_rows_use_material_icons_and_step_fast(page, server):
    _goto(page, server, "decoder_steps", model="paper-en-pt")
    page.wait_for_selector(PLOT)
    titles = _titles(page)
    assert "encoder-decoder attention" in titles[0]  # the rows come first, then the top-k bars
    for name in ("Reset", "Back", "Next", "Play"):
        button = page.get_by_role("button", name=name, exact=False).first
        assert button.locator('[data-testid="stIconMaterial"]').count() == 1, name
    assert not re.search("[⏮◀▶⏹]", _text(page))  # no glyphs that Debian's fonts lack
    page.mouse.wheel(0, 5000)  # scroll to the last rows: the controls stay in view
    page.wait_for_timeout(500)
    box = page.get_by_role("button", name="Next").bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 768
    seconds = []
    for step in (1, 2, 3):
        start = time.perf_counter()
        page.get_by_role("button", name="Next").click()
        page.get_by_text(f"Decoder input at step {step}").wait_for()
        _settle(page)
        seconds.append(time.perf_counter() - start)
    out = ROOT / "artifacts" / "teacher-timings.json"
    out.write_text(json.dumps({"decoder_next_seconds": seconds}, indent=1))
    assert max(seconds) < 5  # ~1 s on a quiet CPU (bench/tooling/test_in_browser.py)


def test_4_a_shared_link_keeps_tab_kind_layer_and_hidden_special_tokens(page, server, browser):
    _goto(page, server, "attention_maps", model="paper-sov")
    page.get_by_text("Encoder-decoder (cross) attention", exact=True).click()
    _settle(page)
    page.get_by_text("Hide special tokens").click()
    _settle(page)
    page.locator('[data-testid="stButtonGroup"]').get_by_text("Mean / max / rollout").click()
    _settle(page)
    page.get_by_text("Max", exact=True).click()
    mine = _figures(page)
    assert mine and "max" in mine[0].lower()
    friend = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    friend.set_default_timeout(90_000)
    friend.goto(page.url)  # a fresh browser context: a new session that has only the link
    assert _figures(friend) == mine
    friend.context.close()


def test_4_a_shared_link_keeps_the_query_token_beam_width_and_top_k(page, server, browser):
    _goto(page, server, "qkv_walkthrough", model="paper-sov", token="3")
    mine = _figures(page)
    assert "token=3" in page.url
    _goto(page, server, "decoder_steps", model="paper-reverse", beam="3", top_k="2", step="2")
    decoder = _figures(page)
    assert "Decoder input at step 2" in _text(page)
    friend = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
    friend.set_default_timeout(90_000)
    friend.goto(f"{server}/qkv_walkthrough?model=paper-sov&token=3")
    assert _figures(friend) == mine
    friend.goto(page.url)
    assert _figures(friend) == decoder and any("beam" in f.lower() for f in decoder)
    friend.context.close()


def test_5_a_paragraph_is_offered_one_sentence_at_a_time_and_long_maps_stay_readable(page, server):
    text = "The cat sat on the mat. The dog slept by the door. Birds sang in the trees."
    _goto(page, server, "attention_maps", model="bergamot-en-pt", sentence=text)
    assert "The input has 3 sentences" in _text(page)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="One sentence").click()
    page.get_by_role("option").filter(has_text="The dog slept").click()
    expect(page.locator("textarea").first).to_have_value("The dog slept by the door.")
    _settle(page)
    long = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 12)
    _goto(page, server, "attention_maps", model="paper-en-pt", sentence=long, attn_tab="Maps")
    page.wait_for_selector(PLOT)
    head = page.locator(".js-plotly-plot").nth(1)
    assert head.bounding_box()["height"] <= 900  # was 28 px per token: ~4,000 px
    assert "zoom in for all" in head.text_content()


def test_6_softmax_page_on_paper_en_pt_shows_its_own_runs_with_and_without_the_scale(page, server):
    _goto(page, server, "softmax_saturation", model="paper-en-pt")
    page.get_by_text("5. Training with and without the scale").wait_for()
    _settle(page)
    assert "was trained once" not in _text(page)
    _figures(page)  # every chart drawn
    titles = _titles(page)
    assert "paper-en-pt: trained twice (English -> Portuguese)" in titles, titles


OVERLAPS_JS = """plot => {
    const box = e => e.getBoundingClientRect();
    const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom
        && b.top < a.bottom;
    const titles = [...plot.querySelectorAll('.gtitle, .annotation-text')].map(box);
    const areas = [...plot.querySelectorAll('.draglayer .nsewdrag')].map(box);
    return titles.some((t, i) => areas.some(a => hit(t, a))
        || titles.some((u, j) => j !== i && hit(t, u)));
}"""


def test_7_qkv_chart_titles_overlap_no_chart(page, server):
    _goto(page, server, "qkv_walkthrough", model="paper-en-pt", kind="decoder", token="2")
    plots = page.locator(".js-plotly-plot")
    _figures(page)
    assert plots.count() >= 4
    for i in range(plots.count()):
        assert not plots.nth(i).evaluate(OVERLAPS_JS), f"chart {i}: a title overlaps"


def test_7_encoder_no_output_language_switch_statistics_dash_and_download_names(page, server):
    _goto(page, server, "attention_maps", model="minilm")
    assert "No output: minilm is an encoder" in _text(page)
    assert "Output:" not in _text(page)
    _goto(page, server, "attention_maps", model="bergamot-en-pt",
          sentence="Eu sou um estudante e gosto muito de ler.")  # fmt: skip
    assert "This text looks Portuguese, but bergamot-en-pt reads English" in _text(page)
    page.get_by_role("button", name="Switch to bergamot-pt-en").click()
    page.wait_for_function("() => location.search.includes('model=bergamot-pt-en')")
    expect(page.locator("textarea").first).to_have_value(re.compile("^Eu sou um estudante"))
    _settle(page)
    _goto(page, server, "attention_maps", model="paper-sov", kind="cross", attn_tab="Statistics")
    assert "no diagonal distance for cross-attention" in _text(page)
    _goto(page, server, "attention_maps", model="paper-sov", kind="cross", layer="1", head="2")
    with page.expect_download() as info:
        page.get_by_role("button", name="Data as JSON").click()
    assert info.value.suggested_filename == "paper-sov_attention-cross-L1-H2.json"


def test_5_a_translation_that_stops_early_is_flagged(page, server):
    # measured: Bergamot EN->PT translates this 12-sentence paragraph into 2 sentences
    long = " ".join(["The quick brown fox jumps over the lazy dog near the river bank."] * 12)
    _goto(page, server, "attention_maps", model="bergamot-en-pt", sentence=long)
    page.wait_for_selector(PLOT)
    assert "The output looks cut short" in _text(page)
    assert "The input has 12 sentences" in _text(page)


BAR_TEXT_PX_JS = """() => [...document.querySelectorAll('.js-plotly-plot text.bartext')]
    .filter((t) => t.textContent.trim()).map((t) => {
      const m = t.getScreenCTM(); const b = t.getBoundingClientRect();
      return {px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b),
              bottom: b.bottom, right: b.right}; })"""


def test_8_the_teacher_pauses_and_the_students_page_shows_it_and_the_first_screen_holds_the_class(
    browser, serve_app, tmp_path, chart_problems
):
    """Issue 40 in Chromium: the presenter view's first screen at 1024x768 (code, link, QR code,
    the funnel with its legend and every step, counts at least 14 px), the key gone from the
    address bar, and Pause reaching a student's open page by itself, then Resume, then the
    student's removal."""
    import viz_transformer as vt  # the class store: this test only

    db = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    store = vt.classroom(db)
    code, key = store.teacher.create("paper_tour")
    lesson = vt.load_lesson("paper_tour")
    for i in range(12):  # a class already under way: counts on most columns
        token = store.students.join(code, f"Student {i}")
        for step in range(1 + i % 5):
            store.students.move(code, token, step)
    with serve_app("teacher-class", {"VT_DATABASE_URL": db}) as url:
        student = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
        student.set_default_timeout(90_000)
        student.goto(f"{url}/lesson?class={code}")
        student.get_by_label("Your name").fill("Ada")
        student.get_by_role("button", name="Join", exact=True).click()
        expect(student.get_by_role("heading", name=lesson.steps[0].title)).to_be_visible()

        teacher = browser.new_context(viewport={"width": 1024, "height": 768}).new_page()
        teacher.set_default_timeout(90_000)
        link = {"class": code, "once": store.access.one_time_link(code, key), "presenter": "True"}
        teacher.goto(f"{url}/teacher?{urlencode(link)}")
        teacher.wait_for_selector(".js-plotly-plot text.bartext")
        _settle(teacher)
        teacher.wait_for_function("() => !location.search.includes('once=')")  # not projected
        expect(teacher.get_by_text(f"Class code {code}")).to_be_in_viewport()
        expect(teacher.get_by_text(f"/lesson?class={code}")).to_be_in_viewport()
        qr = teacher.locator('[data-testid="stImage"] img').first
        expect(qr).to_be_in_viewport(ratio=1.0)
        assert qr.bounding_box()["width"] >= 120
        legend = teacher.locator(".js-plotly-plot .legendtext")
        assert legend.all_text_contents() == ["reached", "answered", "correct"]
        for entry in legend.all():
            expect(entry).to_be_in_viewport(ratio=1.0)
        ticks = teacher.locator(".js-plotly-plot .xtick text")
        assert ticks.all_text_contents() == [str(i) for i in range(1, len(lesson.steps) + 1)]
        for tick in ticks.all():
            expect(tick).to_be_in_viewport(ratio=1.0)
        counts = teacher.evaluate(BAR_TEXT_PX_JS)
        assert counts and min(c["px"] for c in counts) >= 14, counts
        assert max(c["bottom"] for c in counts) <= 768 and max(c["right"] for c in counts) <= 1024
        assert chart_problems(teacher) == []
        SHOTS.mkdir(parents=True, exist_ok=True)
        teacher.screenshot(path=str(SHOTS / "presenter-teacher-class.png"))

        teacher.get_by_role("button", name="Pause").click()
        expect(student.get_by_text("Eyes on the teacher")).to_be_visible(timeout=15_000)
        expect(student.get_by_role("heading", name=lesson.steps[0].title)).to_have_count(0)
        assert student.get_by_role("button").filter(has_text="Next").count() == 0
        assert "student=" in student.url  # no reload: the open page redrew itself
        teacher.get_by_role("button", name="Resume").click()
        expect(student.get_by_role("heading", name=lesson.steps[0].title)).to_be_visible(
            timeout=15_000
        )
        assert store.students.answers_of(code, student.url.split("student=")[1].split("&")[0]) == []
        store.teacher.remove(code, key, "Ada")  # a test join: the open page says so by itself
        expect(student.get_by_text("Your teacher removed you")).to_be_visible(timeout=15_000)
        student.context.close()
        teacher.context.close()
