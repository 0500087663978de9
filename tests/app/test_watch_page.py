"""The "Watch it learn" page (issue 16): start a live run, see curves and maps grow, a second
start refused with a message, another visitor's Stop, then the model opened in the other pages."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from viz_transformer.models.registry import forget_memory_models
from viz_transformer.training.live.runs import shared_trainer
from viz_transformer.training.live.train import PREFIX

PAGE = "pages/watch_it_learn.py"


def _open(open_page) -> AppTest:
    """The page through app.py's navigation (its link to the other pages needs it)."""
    app = open_page("app.py").switch_page(PAGE).run()
    assert not app.exception, app.exception
    return app


@pytest.fixture
def trainer() -> Iterator:
    shared = shared_trainer()
    shared.stop()
    yield shared
    shared.stop()
    forget_memory_models(PREFIX)


def test_start_watch_refuse_stop_open(trainer, open_page, figures) -> None:
    page = _open(open_page)
    page.slider(key="live_seconds").set_value(60)
    page.button(key="live_start").click().run()
    assert not page.exception and trainer.running()
    deadline = time.monotonic() + 60
    while trainer.snapshot().version < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # a report after some steps
    page.run()
    assert not page.exception
    titles = [f.get("layout", {}).get("title", {}).get("text", "") for f in figures(page)]
    assert len(titles) == 5  # the curves, then each run's cross and decoder self-attention
    assert sum("cross" in t for t in titles) == 2 and sum("self" in t for t in titles) == 2
    assert "Training: reverse" in page.get("progress")[0].proto.text

    visitor = _open(open_page)  # a second session sees the run and may stop it
    visitor.button(key="live_start").click().run()
    assert "in progress" in visitor.warning[0].value
    visitor.button(key="live_stop").click().run()
    assert not visitor.exception and not trainer.running()
    assert trainer.snapshot().state == "stopped"

    page.run()  # the first session's redraw after the stop
    assert not page.exception
    page.button(key="open-live:reverse").click().run()
    assert page.session_state["model"] == "live:reverse"
    assert page.session_state["sentence"] == "happy king red ship blue sea"


def test_ten_sessions_watch_one_run_and_a_closed_one_leaves_it_running(trainer, open_page) -> None:
    run_id = trainer.start("dates", seconds=60)
    sessions = [_open(open_page) for _ in range(10)]  # each polls the one shared run
    del sessions[3]  # a tab closed mid-run: the run goes on, the others keep redrawing
    for session in sessions:
        session.run()
        assert not session.exception
        assert "Training: dates" in session.get("progress")[0].proto.text
    assert trainer.running() and trainer.snapshot().run_id == run_id  # no second run
