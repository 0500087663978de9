"""Heads across a corpus in a real browser, on a server whose cache holds a stopped run (two
finished batches of the built-in corpus): the page draws those batches and says where it
stopped; its grids are readable at 1024x768 in presenter mode and at 1366x768; the statistic
and head come back from a link in a fresh browser; Run goes on from the batches on disk."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from viz_transformer.analysis.corpus.api import cache_folder, compute
from viz_transformer.models.registry import load_model
from viz_transformer.records.progress import StopToken
from viz_transformer.text import corpora

BATCH = 64  # the app's: one shard per batch (ui/corpus_jobs.py)
SCREENS = {"1024-presenter": (1024, 768, True), "1366": (1366, 768, False)}


@pytest.fixture(scope="module")
def corpus_server(
    serve_app, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    """A server whose cache folder holds the first two batches of the built-in corpus for
    ``paper-en-pt``, as a Stop after them leaves it; yields its URL and that folder."""
    cache = tmp_path_factory.mktemp("corpus-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VT_CACHE_DIR", str(cache))
        model, sentences, stop = load_model("paper-en-pt"), corpora.builtin_sentences(), StopToken()
        folder = cache_folder(model, sentences)

        def stop_after_two(done: int, total: int) -> None:
            if done >= 2 * BATCH:
                stop.set()

        compute(model, sentences, folder, batch_size=BATCH, shard_size=BATCH,
                progress=stop_after_two, stop=stop)  # fmt: skip
    assert len(list(Path(folder).glob("shard-*"))) == 2
    with serve_app("test_corpus_browser", {"VT_CACHE_DIR": str(cache)}) as url:
        yield url, Path(folder)


def _open(browser: Browser, url: str, width: int, presenter: bool) -> Page:
    page = browser.new_context(viewport={"width": width, "height": 768}).new_page()
    page.set_default_timeout(120_000)
    page.goto(url + ("&" if "?" in url else "?") + f"presenter={presenter}")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4")
    page.wait_for_timeout(500)  # plotly's last relayout
    return page


@pytest.mark.parametrize("screen", list(SCREENS))
def test_a_stopped_runs_batches_are_drawn_readably(
    corpus_server: tuple[str, Path], browser: Browser, chart_problems, screen: str
):
    width, _, presenter = SCREENS[screen]
    url, folder = corpus_server
    page = _open(browser, f"{url}/heads_across_corpus", width, presenter)
    # the fixture's two batches, or more where the run-on test below ran first (any order)
    done = BATCH * len(list(folder.glob("shard-*")))
    expect(page.get_by_text(f"Stopped after {done:,} of 1,000 sentences")).to_be_visible()
    expect(page.get_by_text(f"Run goes on from sentence {done + 1:,}")).to_be_visible()
    problems = chart_problems(page)
    assert not problems, "\n".join(problems)
    grids = page.locator(".js-plotly-plot").all()[:3]  # one kind per row, each full width
    boxes = [g.bounding_box() for g in grids]
    assert (
        len({round(b["x"]) for b in boxes}) == 1 and boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    )
    ticks = [t.text_content() for t in grids[2].locator(".xtick text").all()]
    assert ticks == [f"H{h}" for h in range(8)]  # every head labelled
    page.context.close()


def test_the_view_comes_back_from_a_link_and_run_goes_on(
    corpus_server: tuple[str, Path], browser: Browser
):
    url, folder = corpus_server
    page = _open(browser, f"{url}/heads_across_corpus", 1366, False)
    assert "corpus_stat=entropy" in page.url and "corpus_head=" in page.url  # the view's link
    link = re.sub("corpus_head=[^&]*", "corpus_head=cross%2F1%2F3", page.url)
    link = link.replace("corpus_stat=entropy", "corpus_stat=prev_token")
    page.context.close()
    fresh = _open(browser, link, 1366, False)  # a new browser: a new session
    expect(fresh.get_by_text("Showing cross attention L1 H3")).to_be_visible()
    expect(fresh.get_by_text("cross attention L1 H3: prev_token per sentence")).to_be_visible()
    kept = {p.name: p.stat().st_mtime_ns for p in folder.glob("shard-*")}
    fresh.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Run").click()
    # one more batch finished: 192 sentences or more
    more = re.compile(r"(19\d|[2-9]\d\d|1,000)/1,000 sentences")
    expect(fresh.get_by_text(more)).to_be_visible(timeout=120_000)
    main = fresh.get_by_test_id("stMainBlockContainer")  # not the toolbar's Stop of a run
    main.get_by_role("button", name="Stop").click()
    stopped = fresh.get_by_text(re.compile(r"Stopped after [\d,]+ of 1,000"))
    expect(stopped).to_be_visible(timeout=60_000)  # after the batch in flight
    fresh.context.close()
    now = {p.name: p.stat().st_mtime_ns for p in folder.glob("shard-*")}
    assert len(now) > len(kept) and all(now[n] == t for n, t in kept.items())  # not redone
