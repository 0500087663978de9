"""The first visit after the server starts: the page's title and a note show at once, while
PyTorch and the model load, instead of a blank main area; both go once the page has drawn. A
teacher's first link of the day is rarely Home: every page's link, opened as a fresh server's
very first request, shows its title with the note first, then the page. The order is tested here;
the seconds are a benchmark's (``bench/cold_start.py``), since a busy machine stretches them."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from pages.nav import table
from viz_transformer.testing.chromium import WATCH_STATES

LOGS = Path(__file__).resolve().parents[2] / "artifacts"
WARMED = "the model and Home warmed in"

STARTING = re.compile("Starting: loading PyTorch and the model")
PAGES = {  # URL path -> the page's title: every page of the table but Home and the class's two
    entry.url_path: entry.title for entry in table.PAGES if not entry.default and not entry.group
}


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


def test_the_app_command_warms_home_while_it_listens_so_home_opens_on_ready_maps(
    browser, serve_app
):
    """``python -m viz_transformer app`` (the README's command) answers at once and warms the
    default model and Home's maps in a thread (issue 49: a newcomer's first chart came 29 s after
    opening Home on a cold server). Opened once it has said so, Home draws its three maps from
    the caches: app.py's "Starting" note never shows, nothing is left to load. The seconds are
    ``bench/first_chart.py --cold-home``'s."""
    log = LOGS / "test_cold_start-app-server.log"
    with serve_app("test_cold_start-app", command=("viz_transformer", "app")) as url:
        assert WARMED not in log.read_text()  # it listened before the warm-up was done
        deadline = time.monotonic() + 180
        while WARMED not in log.read_text():
            assert time.monotonic() < deadline, f"not warmed in 180 s; see {log}"
            time.sleep(0.5)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        page.add_init_script(WATCH_STATES)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_function(
            "() => document.querySelectorAll('.js-plotly-plot .hm image').length >= 3",
            timeout=90_000,
        )
        states = page.evaluate("window.vtStates")
        page.close()
    assert states and not any(note for _, note, _ in states), states


@pytest.mark.slow
@pytest.mark.parametrize("path", list(PAGES))
def test_a_fresh_servers_first_request_for_any_page_shows_its_title_then_the_page(
    browser, serve_app, path
):
    title = PAGES[path]
    with serve_app(f"test_cold_start-{path}") as url:  # this link is the server's first request
        page = browser.new_page(viewport={"width": 1024, "height": 768})
        page.add_init_script(WATCH_STATES)  # every state the page passes through, however brief
        page.goto(f"{url}/{path}", wait_until="domcontentloaded")
        page.locator("h1", has_text=title).wait_for(timeout=90_000)
        expect(page.get_by_text(STARTING)).to_have_count(0, timeout=120_000)
        expect(page.locator("h1", has_text=title)).to_have_count(1)
        states = [(note, titles) for _, note, titles in page.evaluate("window.vtStates")]
        page.close()
    titled = [i for i, (_, titles) in enumerate(states) if any(title in t for t in titles)]
    noted = [i for i, (note, _) in enumerate(states) if note]
    assert noted and titled, f"{path}: states {states}"
    # the note shows with the title (the skeleton, drawn before the page's own code runs) and
    # leaves once, for good; the title stays from its first showing to the page's own (last)
    assert titled[0] <= noted[0] and noted == list(range(noted[0], noted[-1] + 1)), states
    assert titled == list(range(titled[0], len(states))) and not states[-1][0], states
