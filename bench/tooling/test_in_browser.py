"""The benchmark scripts' browser helpers in Debian's headless Chromium: bench_views draws a static
plotly page and reports each run; classroom_load's checks catch each kind of failure."""

from __future__ import annotations

import time

import numpy as np
import pytest
from playwright.sync_api import sync_playwright

from bench.harness.browser import draw_plotly, launch
from bench.harness.synthetic import attention, tokens
from bench.harness.tab_classroom import (
    WATCH,
    Tab,
    check_tab,
    sentences,
    step,
    wait_for_chart,
)
from viz_transformer.figures.attention import overview_figure
from viz_transformer.records.trace import Trace

pytestmark = pytest.mark.slow


def test_the_overview_page_draws_and_reports_each_run():
    n = 12
    trace = Trace("synthetic", tuple(tokens(n)), (), (), attention(n), None, None)
    fig_json = overview_figure(trace, "encoder").to_json()
    with sync_playwright() as p:
        browser = launch(p)
        try:
            newplot, total = draw_plotly(browser, fig_json, runs=2, timeout_s=60)
        finally:
            browser.close()
    assert len(newplot) == len(total) == 2
    assert all(0 < a < b for a, b in zip(newplot, total, strict=True))  # newPlot after navigation
    assert np.isfinite(total).all()


def test_the_checks_catch_a_traceback_a_timeout_and_another_tabs_sentence():
    """The load test can fail: a page faking each failure trips the matching check."""
    mine, theirs, late = (Tab(m, s) for m, s in sentences(3))
    with sync_playwright() as p:
        browser = launch(p)
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
