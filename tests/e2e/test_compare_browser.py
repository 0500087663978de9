"""The "Compare two models" page in a real browser: clicking a line of a live run's drift chart
picks that head (the view's URL follows), and the default pair draws its heatmap and pair maps."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from playwright.sync_api import Page, expect

from viz_transformer import settings
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.training.checkpoints import new_run_folder
from viz_transformer.training.live.train import train_live


def _drawn(page: Page) -> None:
    page.wait_for_selector(".js-plotly-plot .main-svg")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


# a chart's title, drawn by plotly or (when too long for the chart) set above it in bold; not
# the chart's visually hidden description, which repeats the title for screen readers
TITLES = ".js-plotly-plot .gtitle, [data-testid='stMarkdownContainer'] strong"


def _titled(page: Page, title: str) -> None:
    """Wait for a chart titled ``title`` (its first words) to be drawn."""
    page.locator(TITLES).filter(has_text=title).wait_for()


def test_clicking_a_drift_line_shows_that_head_at_each_checkpoint(server: str, page: Page):
    folder = new_run_folder("reverse", settings.CHECKPOINTS_DIR)  # the server's folder too
    train_live("reverse", seed=0, max_steps=30, save_to=folder, save_every=10)
    page.goto(f"{server}/compare_models?cmp_mode=Checkpoints+of+a+live+run&cmp_kind=cross")
    _drawn(page)
    assert "cmp_head=0" in page.url
    drift = page.locator(".js-plotly-plot").first
    drift.locator(".scatterlayer .trace").nth(3).locator(".points path").nth(1).click(force=True)
    page.wait_for_url("**cmp_head=3**")
    _titled(page, "L1 H1 at each checkpoint")


def test_the_default_pair_draws_distances_and_a_pairs_maps(server: str, page: Page):
    page.goto(f"{server}/compare_models")
    _drawn(page)
    _titled(page, "JS distance of every head pair")
    assert page.locator(".js-plotly-plot").count() == 2
    assert "cmp_a=paper-en-pt" in page.url and "cmp_b=bergamot-en-pt" in page.url


def test_a_links_models_come_back_hugging_face_ones_included(
    server: str, page: Page, tmp_path: Path
):
    bert = f"hf:{BUILDERS['bert'](tmp_path / 'bert')}"  # a session's own model, by folder
    query = urllib.parse.urlencode({"cmp_a": bert, "cmp_b": bert, "cmp_text": "the cat sat"})
    page.goto(f"{server}/compare_models?{query}")
    _drawn(page)
    _titled(page, "JS distance of every head pair")
    for label in ("Model A", "Model B"):  # the link's model is the one picked
        expect(page.get_by_role("combobox", name=label)).to_have_value(bert)
    assert page.locator(".js-plotly-plot").count() == 2
    reverse = "cmp_a=paper-reverse&cmp_b=paper-reverse&cmp_kind=cross&cmp_text=red+ship"
    page.goto(f"{server}/compare_models?{reverse}")
    _drawn(page)
    expect(page.get_by_role("combobox", name="Model B")).to_have_value("paper-reverse")
    pair = page.locator(TITLES).filter(
        has_text="(cross) attention: matched pair at distance 0.0000"
    )
    expect(pair).to_have_count(1)
