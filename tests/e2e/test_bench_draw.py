"""bench/bench_views.py's static plotly page draws in the real headless Chromium."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import sync_playwright

from bench.bench_bertviz import attention, tokens
from bench.bench_views import draw_plotly, launch
from viz_transformer.figures.attention import overview_figure
from viz_transformer.records.trace import Trace


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
