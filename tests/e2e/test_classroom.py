"""Ten students at once on one real server (issue 6): ten browser tabs, each its own Streamlit
session, type different sentences on the Attention maps page at the same time; every tab must
draw its own sentence, none another's, without a traceback, within a bounded time.

The same code is the benchmark ``bench/classroom_load.py`` (run it with ``--tabs 30``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from bench.classroom_load import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    WATCH,
    Tab,
    check_tab,
    healthy,
    report,
    run_classroom,
    sentences,
    serve,
    step,
    wait_for_chart,
)

pytestmark = pytest.mark.slow

TABS = 10
DEADLINE = 240  # seconds for everything: server start, first maps in every tab, the typed run


def test_ten_tabs_typing_at_once_each_see_their_own_sentence():
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install chromium"
    start = time.monotonic()
    with serve(ROOT / "artifacts" / "classroom-test-server.log") as url:
        room = run_classroom(url, TABS, timeout=DEADLINE - (time.monotonic() - start))
    elapsed = time.monotonic() - start
    assert not healthy(url), "the server this test started is still answering"
    print(report(room, elapsed))  # the numbers, for whoever reads the test log (pytest -s)
    assert room.errors == []
    assert len(room.tabs) == TABS
    assert len({t.sentence for t in room.tabs}) == TABS  # different sentences, one per tab
    assert all(t.seconds is not None and 0 < t.seconds < DEADLINE for t in room.tabs)
    assert room.percentile(50) <= room.percentile(95) < DEADLINE
    assert elapsed < DEADLINE + 30  # the run is bounded; stopping the server takes the rest


def test_the_checks_catch_a_traceback_a_timeout_and_another_tabs_sentence():
    """The load test can fail: a page faking each failure trips the matching check."""
    mine, theirs, late = (Tab(m, s) for m, s in sentences(3))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(  # a chart with the other tab's word, and a traceback
                f'<div class="js-plotly-plot">Encoder {theirs.marker}</div>'
                '<div data-testid="stException">Traceback</div>'
            )
            page.evaluate(WATCH, [mine.marker, [theirs.marker]])
            page.wait_for_timeout(100)  # let the watcher poll once
            step(mine, lambda: check_tab(page, mine, [mine, theirs], time.monotonic() + 10))
            page.evaluate(WATCH, [late.marker, []])
            step(late, lambda: wait_for_chart(page, late, time.monotonic() + 0.5))
        finally:
            browser.close()
    assert mine.errors == [
        "a traceback (stException) in the page",
        "its own sentence is no longer in the charts",
        f"charts show another tab's sentence: ['{theirs.marker}']",
    ]
    assert late.seconds is None and late.errors[0].startswith("timeout")
