"""Live training (issue 16): curves and traces from a run of seconds, stop, determinism, the
thread count left as it was, and the server's one shared run (refused second start, no orphan)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.registry import forget_memory_models
from viz_transformer.training.live.metrics import antidiagonal_mass
from viz_transformer.training.live.runs import LABELS, LiveTrainer
from viz_transformer.training.live.train import PREFIX, LiveStep, torch_threads, train_live


@pytest.fixture(autouse=True)
def no_live_models() -> Iterator[None]:
    yield
    forget_memory_models(PREFIX)


def _in_fresh_thread(func):  # what a thread started now (a Streamlit script run) sees
    out = []
    thread = threading.Thread(target=lambda: out.append(func()))
    thread.start()
    thread.join()
    return out[0]


def test_a_short_run_reports_curves_and_traces_and_returns_a_traceable_model() -> None:
    reports: list[LiveStep] = []
    model = train_live("reverse", seconds=60, seed=0, on_step=reports.append, max_steps=40)
    assert [r.step for r in reports] == [20, 40]
    assert all(np.isfinite(r.loss) and 0 <= r.exact_match <= 1 for r in reports)
    assert reports[1].loss < reports[0].loss  # it learns
    record = reports[-1].trace.validate()
    assert record.src_tokens[:6] == ("happy", "king", "red", "ship", "blue", "sea")
    assert record.cross.shape == (2, 2, 7, 7)  # layers, heads, <s> + 6 words, 6 words + </s>
    assert antidiagonal_mass(record).shape == (2, 2)
    assert model.name == "live:reverse" and model.head_scale().scaled
    assert "live:reverse" in vt.available_models() and vt.load_model("live:reverse") is model
    assert vt.trace(model, "sea blue ship").validate().cross is not None
    forget_memory_models(PREFIX)
    with pytest.raises(ValueError, match="unknown model"):
        vt.load_model("live:reverse")


def test_same_seed_threads_and_steps_give_the_same_weights() -> None:
    first = train_live("dates", seconds=60, seed=3, max_steps=6).module.state_dict()
    again = train_live("dates", seconds=60, seed=3, max_steps=6).module.state_dict()
    other = train_live("dates", seconds=60, seed=4, max_steps=6).module.state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_stop_ends_the_run_after_the_current_step() -> None:
    stop = vt.StopToken()
    reports: list[LiveStep] = []

    def on_step(report: LiveStep) -> None:
        reports.append(report)
        stop.set()

    model = train_live("sov", seconds=60, scale_scores=False, on_step=on_step, stop=stop)
    assert [r.step for r in reports] == [20]
    assert model.name == "live:sov-unscaled" and not model.head_scale().scaled


def test_the_thread_count_of_the_rest_of_the_process_is_unchanged() -> None:
    before = torch.get_num_threads()
    threads = before + 1  # differs from the process's count, so a leak would show
    seen: list[int] = []

    def train() -> None:
        with torch_threads(threads):
            seen.append(torch.get_num_threads())  # the training thread's own count
            seen.append(_in_fresh_thread(torch.get_num_threads))  # a thread started meanwhile
        train_live(seconds=60, threads=threads, max_steps=1)

    _in_fresh_thread(train)
    assert seen == [threads, before]
    assert torch.get_num_threads() == before
    assert _in_fresh_thread(torch.get_num_threads) == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"task": "nope"}, "choose one of reverse"), ({"seconds": 601}, "at most 600"),
     ({"size": "huge"}, "choose one of tiny"), ({"threads": 0}, "at least 1")],
)  # fmt: skip
def test_bad_arguments_say_what_to_choose(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        train_live(**kwargs)
    with pytest.raises(ValueError, match=message):
        LiveTrainer().start(**kwargs)


def test_the_shared_run_refuses_a_second_start_stops_and_leaves_no_thread() -> None:
    threads_before = threading.active_count()
    trainer = LiveTrainer()
    trainer.start("reverse", seconds=60)
    with pytest.raises(RuntimeError, match="in progress"):
        trainer.start("dates")
    deadline = time.monotonic() + 60
    while not trainer.snapshot().curves[LABELS[False]]["step"] and time.monotonic() < deadline:
        time.sleep(0.2)
    errors: list[BaseException] = []

    def read() -> None:  # a page redrawing while Stop is pressed
        try:
            for _ in range(200):
                snap = trainer.snapshot()
                assert all(len(set(map(len, c.values()))) == 1 for c in snap.curves.values())
        except BaseException as exc:  # reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    trainer.stop()
    reader.join()
    snap = trainer.snapshot()
    assert not errors and snap.state == "stopped" and not trainer.running()
    assert threading.active_count() == threads_before
    assert snap.models == ("live:reverse", "live:reverse-unscaled")
    assert set(snap.traces) == set(LABELS.values())
    assert snap.curves[LABELS[True]]["step"] == snap.curves[LABELS[False]]["step"]  # alternating
    vt.trace(vt.load_model("live:reverse-unscaled"), "sea blue ship").validate()
    trainer.start("dates", seconds=1, compare=False)  # a new run drops the previous models
    assert "live:reverse" not in vt.available_models()
    trainer.stop()
    assert trainer.snapshot().models == ("live:dates",)


def test_a_run_ends_by_its_time_limit() -> None:
    trainer = LiveTrainer()
    trainer.start("reverse", seconds=2, compare=False)
    trainer._thread.join(60)  # the job must end by itself
    snap = trainer.snapshot()
    assert snap.state == "done" and 2 <= snap.elapsed < 30 and snap.curves[LABELS[True]]["step"]
