"""The server's console stays clean: ``python -m viz_transformer app`` (the README's command)
prints no warning and no stack trace on its stderr, neither as it starts and warms Home in a
thread (Streamlit's "Thread 'vt-warm': missing ScriptRunContext!" was there on every start) nor
when a reader opens Home, moves to another page, types a sentence and clicks a head."""

from __future__ import annotations

import re
import time
from pathlib import Path

from playwright.sync_api import expect

LOGS = Path(__file__).resolve().parents[2] / "artifacts"
WARMED = "the model and Home warmed in"
CHART = ".js-plotly-plot .hm image"
STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ ")  # Streamlit's log prefix
# what Streamlit itself says on stderr as it starts (its logger writes there, info included)
EXPECTED = (re.compile(r"Uvicorn server started on 127\.0\.0\.1:\d+$"),)


def unexpected(stderr: str) -> list[str]:
    """The lines of ``stderr`` that are not Streamlit's expected start-up lines."""
    lines = [STAMP.sub("", line).strip() for line in stderr.splitlines()]
    return [line for line in lines if line and not any(p.match(line) for p in EXPECTED)]


def test_unexpected_keeps_what_a_warning_or_a_traceback_prints():
    stderr = (
        "2026-12-06 07:04:06.372 Uvicorn server started on 127.0.0.1:8765\n"
        "2026-12-06 07:04:10.646 Thread 'vt-warm': missing ScriptRunContext! This warning ...\n"
        "Traceback (most recent call last):\n"
    )
    assert unexpected(stderr) == [
        "Thread 'vt-warm': missing ScriptRunContext! This warning ...",
        "Traceback (most recent call last):",
    ]


def test_the_app_command_prints_no_warning_on_start_or_on_a_click(browser, serve_app):
    errors = LOGS / "test_console-stderr.log"
    log = LOGS / "test_console-server.log"
    with serve_app("test_console", command=("viz_transformer", "app"), errors=errors) as url:
        deadline = time.monotonic() + 180
        while WARMED not in log.read_text():
            assert time.monotonic() < deadline, f"not warmed in 180 s; see {log}"
            time.sleep(0.5)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.set_default_timeout(120_000)
        page.goto(url)
        page.wait_for_function(
            f"() => document.querySelectorAll('{CHART}').length >= 3"  # Home's three maps
        )
        page.locator('[data-testid="stSidebarNav"]').get_by_text("Attention maps").click()
        page.wait_for_selector(CHART)
        box = page.locator("textarea").first
        box.fill("Where is the train station?")
        box.press("Control+Enter")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')]"
            ".some(p => p.textContent.includes('station'))"
        )
        page.locator(".js-plotly-plot .nsewdrag").first.click()  # a cell of the first map
        page.wait_for_timeout(1500)
        page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
        expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        page.close()
        time.sleep(1)  # a line logged by the last rerun reaches the file
    assert unexpected(errors.read_text()) == [], errors.read_text()
