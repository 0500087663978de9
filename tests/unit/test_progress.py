"""``records.progress``: the one progress record, meter and stop token of every long job, checked
against rate and time left computed by hand on a fake clock."""

from __future__ import annotations

import threading

import pytest

from viz_transformer.records.progress import (
    Cancelled,
    Progress,
    ProgressMeter,
    StopToken,
    with_stop,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_time_left_count_from_the_first_report_of_a_resumed_run() -> None:
    clock = Clock()
    meter = ProgressMeter("sentences", total=1000, clock=clock)
    assert meter.last == Progress(0, 1000, "sentences")  # before any report
    first = meter.update(400, 1000)  # a resumed run: 400 kept, done before it started
    assert first.rate == 0 and first.left is None
    clock.now += 4.0
    p = meter.update(600, 1000)  # 200 sentences in 4 s
    assert p.rate == pytest.approx(50.0)
    assert p.left == pytest.approx(400 / 50.0)
    assert p.fraction == pytest.approx(0.6)
    assert p.text() == "600/1,000 sentences, 50.0 sentences/s, about 8 s left"
    assert meter.last is p


def test_a_fraction_reads_as_a_percentage_with_minutes_left() -> None:
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.update(0.0, 1.0)
    clock.now += 30.0
    p = meter.update(0.25, 1.0)  # a quarter in 30 s: 90 s more
    assert p.text() == "25%, about 1 min 30 s left"


@pytest.mark.parametrize(
    ("elapsed", "done", "left"),
    [(0.5, 0.5, None), (2.0, 0.0, None), (2.0, 1.0, None), (2.0, 0.5, 2.0)],
)
def test_time_left_is_unknown_before_a_second_of_work_without_a_rate_or_once_done(
    elapsed, done, left
) -> None:
    clock = Clock()
    meter = ProgressMeter(clock=clock)
    meter.update(0.0, 1.0)
    clock.now += elapsed
    assert meter.update(done, 1.0).left == left


def test_fraction_stays_within_zero_and_one() -> None:
    assert Progress(7, 5).fraction == 1.0 and Progress(3, 0).fraction == 0.0
    assert Progress(1, 4).fraction == 0.25


def test_a_stop_token_raises_cancelled_once_set_from_another_thread_or_by_its_condition() -> None:
    token = StopToken()
    token.check()  # not set: returns
    setter = threading.Thread(target=token.set)
    setter.start()
    setter.join()
    with pytest.raises(Cancelled):
        token.check()
    token.clear()
    assert not token.is_set()
    asked: list[str] = []
    watching = StopToken(also=lambda: bool(asked))
    watching.check()
    asked.append("stop")
    assert watching.is_set()
    with pytest.raises(Cancelled):
        watching.check()


def test_with_stop_checks_the_token_after_each_report() -> None:
    seen: list[tuple[int, ...]] = []
    assert with_stop(None, None) is None
    append = seen.append
    assert with_stop(append, None) is append  # no token: the report itself
    stop = StopToken()
    report = with_stop(lambda *args: seen.append(args), stop)
    report(1, 4)  # any report's arguments pass through (a fraction, or done and total)
    stop.set()
    with pytest.raises(Cancelled):
        report(2, 4)
    assert seen == [(1, 4), (2, 4)]  # the job's last report, then it ends
    only = with_stop(None, StopToken())  # a job asked for its Stop alone still gets its points
    only(0.5)
    with pytest.raises(Cancelled):
        with_stop(None, stop)(0.5)
