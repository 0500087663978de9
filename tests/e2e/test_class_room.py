"""Issue 49, the class in the room, in Chromium: the teacher's key never reaches a history entry
of the browser (a class opened on the page, a teacher's link, a read-only link; with the machine
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


def _class_view(page: Page, code: str = "") -> str:
    """Wait for the class view (its code's heading and the funnel); the code it shows."""
    heading = page.get_by_role("heading", name=f"Class code {code}")
    expect(heading.first).to_be_visible()
    page.wait_for_selector(".js-plotly-plot")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    return heading.first.inner_text().split()[-1]


def _history(page: Page) -> list[str]:
    """Every entry of the tab's history, from the current one back to the first (Back pressed
    until the first entry, each entry given time to redraw)."""
    here = "() => location.href"  # (page.url misses a location.replace)
    urls = [page.evaluate(here)]
    for _ in range(page.evaluate("history.length") - 1):
        page.go_back(wait_until="commit")
        page.wait_for_timeout(700)
        urls.append(page.evaluate(here))
    return urls


def _open_link(page: Page, url: str, params: dict[str, str]) -> None:
    """Open a link with a key (typed or clicked: a new history entry); wait for the page loaded
    again without it."""
    page.goto(f"{url}/teacher?{urlencode(params)}")
    page.wait_for_function("() => !location.search.includes('key=')")
    _class_view(page, params["class"])


@pytest.mark.parametrize("loaded", [False, True], ids=["quiet", "loaded"])
def test_the_key_never_reaches_a_history_entry_and_a_reload_keeps_the_view(room, page, loaded):
    url, db = room
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * loaded)
    ]
    try:
        page.goto(f"{url}/teacher")  # a class opened on the page: its key never in the URL
        page.get_by_role("button", name="Open a class").click()
        code = _class_view(page)
        page.get_by_role("button", name="Pause").click()  # a full run of the class view
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        page.reload()  # F5: a new session, the same view (the key kept by this browser)
        _class_view(page, code)
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        store = vt.classroom(db)
        other, other_key = store.create(TOUR)
        _open_link(page, url, {"class": other, "key": other_key})
        page.wait_for_timeout(3500)  # a redraw of the live view
        page.get_by_text("Presenter mode").click()  # writes to the URL
        page.wait_for_function("() => location.search.includes('presenter=True')")
        viewer = store.viewer_key(other, other_key)
        _open_link(page, url, {"class": other, "key": viewer, "presenter": "True"})
        expect(page.get_by_text("A read-only link")).to_be_visible()
        page.wait_for_timeout(3500)
        urls = _history(page)
        assert len(urls) >= 6 and urls[-1] == "about:blank", urls
        assert not [u for u in urls if "key=" in u or other_key in u or viewer in u], urls
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
