"""Issue 49, the class in the room, in Chromium: no link's token reaches a history entry of the
tab (a class opened on the page, a teacher's one-time link, a read-only one; with the machine
loaded too) and a reload keeps the teacher's view; the open Teacher page follows a command's
change of the controls; the presenter view's first screen at 1024x768."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

import viz_transformer as vt

pytestmark = pytest.mark.slow

TOUR = "paper_tour"


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, serve_app) -> Iterator[tuple[str, str]]:
    """The app on a class store of its own: (app URL, database URL)."""
    db = f"sqlite:///{tmp_path_factory.mktemp('class-room') / 'classes.sqlite3'}"
    with serve_app("class-room", {"VT_DATABASE_URL": db}) as url:
        yield url, db


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    pg = context.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    context.close()


def _class_board(page: Page, code: str = "") -> str:
    """Wait for the class view (its code's heading and the funnel); the code it shows."""
    heading = page.get_by_role("heading", name=f"Class code {code}")
    expect(heading.first).to_be_visible()
    page.wait_for_selector(".js-plotly-plot")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    return heading.first.inner_text().split()[-1]


# every URL a history entry shows as it is reached, before the app's own script runs (a new
# document: at its start; the same document: at popstate, before Streamlit's listener), once
# the walk back has begun: a key the app takes out a moment later still counts
RECORD_JS = """(() => { const note = () => { try { if (sessionStorage.vtWalk !== '1') return;
  } catch (e) { return; }  // a document without storage (about:blank, a sandboxed frame)
  const seen = JSON.parse(sessionStorage.vtSeen || '[]'); seen.push(location.href);
  sessionStorage.vtSeen = JSON.stringify(seen); };
  note(); addEventListener('popstate', note); })()"""


def _history(page: Page) -> list[str]:
    """Every entry of the tab's history as it is reached, from the current one back to the first
    (Back pressed until the first entry, each entry given time to redraw)."""
    page.evaluate("() => { sessionStorage.vtWalk = '1'; sessionStorage.vtSeen = '[]'; }")
    urls = [page.evaluate("() => location.href")]  # (page.url misses a location.replace)
    seen: list[str] = []
    for _ in range(page.evaluate("history.length") - 1):
        page.go_back(wait_until="commit")
        page.wait_for_timeout(700)
        here = page.evaluate("() => location.href")
        if here.startswith("http"):  # about:blank has no storage
            seen = page.evaluate("() => JSON.parse(sessionStorage.vtSeen || '[]')")
        else:
            seen.append(here)
    return urls + seen


def _open_link(page: Page, url: str, params: dict[str, str]) -> None:
    """Open a one-time link (typed or clicked: a new history entry); wait for the page loaded
    again without its token."""
    page.goto(f"{url}/teacher?{urlencode(params)}")
    page.wait_for_function("() => !location.search.includes('once=')")
    _class_board(page, params["class"])


@pytest.mark.parametrize("loaded", [False, True], ids=["quiet", "loaded"])
def test_the_key_never_reaches_a_history_entry_and_a_reload_keeps_the_view(room, page, loaded):
    url, db = room
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * loaded)
    ]
    try:
        page.add_init_script(RECORD_JS)
        page.goto(f"{url}/teacher")  # a class opened on the page: its key never in the URL
        page.get_by_role("button", name="Open a class").click()
        code = _class_board(page)
        page.get_by_role("button", name="Pause").click()  # a full run of the class view
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        page.reload()  # F5: a new session, the same view (the key kept by this browser)
        _class_board(page, code)
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        store = vt.classroom(db)
        other, other_key = store.teacher.create(TOUR)
        once = store.access.one_time_link(other, other_key)
        _open_link(page, url, {"class": other, "once": once})
        page.wait_for_timeout(3500)  # a redraw of the live view
        page.get_by_text("Presenter mode").click()  # writes to the URL
        page.wait_for_function("() => location.search.includes('presenter=True')")
        viewer = store.access.read_only_link(other, other_key)
        _open_link(page, url, {"class": other, "once": viewer, "presenter": "True"})
        expect(page.get_by_text("A read-only link")).to_be_visible()
        page.wait_for_timeout(3500)
        urls = _history(page)
        assert len(urls) >= 6 and urls[-1] in ("about:blank", f"{url}/teacher"), urls
        secrets = (other_key, once, viewer)
        assert not [u for u in urls if "once=" in u or any(s in u for s in secrets)], urls
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


# the digits' ink (the glyphs' drawn height, not the font's box) in screen pixels and their
# contrast on the page, for each count drawn on a bar chart
BAR_DIGITS_JS = """() => { const ctx = document.createElement('canvas').getContext('2d');
  const lum = (c) => { const l = c.map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
  return [...document.querySelectorAll('.js-plotly-plot text.bartext')]
    .filter((t) => t.textContent.trim()).map((t) => {
      const s = getComputedStyle(t); ctx.font = `${s.fontSize} ${s.fontFamily}`;
      const m = ctx.measureText(t.textContent); const k = t.getScreenCTM();
      const fill = (s.fill.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
      return {text: t.textContent, ratio: 1.05 / (lum(fill) + 0.05),
              ink: (m.actualBoundingBoxAscent + m.actualBoundingBoxDescent)
                   * Math.hypot(k.a, k.b)}; }); }"""


def test_the_presenter_view_holds_the_class_and_follows_a_command(room, page):
    """At 1024x768 in presenter mode: the students' link at least 24 px, Pause and the pace
    above the funnel on the first screen, the QR code named, the bars' digits at least 14 px of
    ink at 4.5:1; a command's pause and hidden names reach the open page's controls."""
    url, db = room
    store = vt.classroom(db)
    code, key = store.teacher.create(TOUR)
    for i in range(12):
        token = store.students.join(code, f"Student {i}")
        for step in range(1 + i % 5):
            store.students.move(code, token, step)
    _open_link(
        page,
        url,
        {"class": code, "once": store.access.one_time_link(code, key), "presenter": "True"},
    )
    link = page.get_by_text(f"/lesson?class={code}")
    expect(link).to_be_in_viewport()
    assert float(link.evaluate("e => getComputedStyle(e).fontSize").removesuffix("px")) >= 24
    expect(
        page.get_by_role("img", name=f"QR code of the students' link, {url}/lesson?class={code}")
    ).to_be_visible()
    funnel = page.locator(".js-plotly-plot").first.bounding_box()
    for control in (
        page.get_by_role("button", name="Pause"),
        page.get_by_label("Students may go up to"),
    ):
        expect(control).to_be_in_viewport(ratio=1.0)
        assert control.bounding_box()["y"] + control.bounding_box()["height"] <= funnel["y"]
    digits = page.evaluate(BAR_DIGITS_JS)
    assert digits and min(d["ink"] for d in digits) >= 14, digits
    assert min(d["ratio"] for d in digits) >= 4.5, digits
    store.teacher.pause(code, key)  # `class pause`: the open page's button follows within a redraw
    expect(page.get_by_role("button", name="Resume")).to_be_visible(timeout=15_000)
    page.get_by_text("More controls").click()
    names = page.get_by_role("switch", name="Hide names")
    expect(names).not_to_be_checked()
    store.teacher.hide_names(code, key, True)
    expect(names).to_be_checked(timeout=15_000)
