"""The figure-export line (``ui/export_queue.py``) with a fake renderer in threads: one render at a
time in arrival order, a bounded wait, a refusal at once when full with how long to wait, and
waits estimated from the measured mean render time."""

from __future__ import annotations

import threading
import time

import pytest

from viz_transformer.ui.export_queue import ExportQueue, QueueFull, about


class Renderer:
    """A fake render: blocks until the test releases it, and records the order it ran in."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self.gates: dict[str, threading.Event] = {}
        self.lock = threading.Lock()

    def job(self, name: str):
        self.gates[name] = threading.Event()

        def render() -> str:
            with self.lock:
                self.started.append(name)
                self.running += 1
                self.most_at_once = max(self.most_at_once, self.running)
            assert self.gates[name].wait(10), f"{name} was never released"
            with self.lock:
                self.running -= 1
            return f"<svg {name}>"

        return render


def _until(condition, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.002)


def _until_busy(queue: ExportQueue, busy: int) -> None:
    _until(lambda: queue.line().busy == busy)


def _submit(queue: ExportQueue, renderer: Renderer, name: str, results: dict, waits: dict):
    def run() -> None:
        results[name] = queue.run(
            renderer.job(name), lambda ahead, s: waits.update({name: (ahead, s)})
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_one_at_a_time_in_arrival_order_and_a_full_line_is_refused_at_once() -> None:
    queue = ExportQueue(waiting=2, workers=1, first_guess=4.0)
    renderer, results, waits = Renderer(), {}, {}
    threads = []
    for name in ("a", "b", "c"):  # a renders, b and c wait (the line holds 2)
        threads.append(_submit(queue, renderer, name, results, waits))
        _until_busy(queue, len(threads))
    assert renderer.started == ["a"]
    line = queue.line()
    assert line.full and line.busy == 3
    with pytest.raises(QueueFull, match=r"^3 figures are being saved; try again in about 4 s\.$"):
        queue.run(renderer.job("d"))
    # refused, not queued: it returned while a's gate is still shut, and d never started
    assert not renderer.gates["a"].is_set() and "d" not in renderer.started
    # the waiting ones were told how many were ahead and about how long, from the first guess
    assert waits == {"b": (1, 4.0), "c": (2, 8.0)}
    for name in ("a", "b", "c"):
        _until(lambda n=name: n in renderer.started)
        renderer.gates[name].set()
    for thread in threads:
        thread.join(10)
    assert renderer.started == ["a", "b", "c"] and renderer.most_at_once == 1
    assert results == {n: f"<svg {n}>" for n in "abc"}
    assert not queue.line().full and queue.line().busy == 0


def test_arrival_order_holds_for_many_waiting() -> None:
    queue = ExportQueue(waiting=6, workers=1)
    renderer, results, waits = Renderer(), {}, {}
    names = [f"j{i}" for i in range(7)]
    threads = []
    for name in names:
        threads.append(_submit(queue, renderer, name, results, waits))
        _until_busy(queue, len(threads))
    for name in names:
        _until(lambda n=name: n in renderer.started)
        renderer.gates[name].set()
    for thread in threads:
        thread.join(10)
    assert renderer.started == names and renderer.most_at_once == 1


def test_two_workers_run_two_at_once_and_the_line_bound_counts_both() -> None:
    queue = ExportQueue(waiting=1, workers=2, first_guess=2.0)
    renderer, results, waits = Renderer(), {}, {}
    threads = [_submit(queue, renderer, n, results, waits) for n in ("a", "b")]
    _until(lambda: sorted(renderer.started) == ["a", "b"])
    threads.append(_submit(queue, renderer, "c", results, waits))
    _until(lambda: queue.line().busy == 3)
    assert waits == {"c": (2, 2.0)}  # starts when one of two ends: one render's time
    with pytest.raises(QueueFull, match="3 figures are being saved; try again in about 1 s"):
        queue.run(renderer.job("d"))
    for name in ("a", "b", "c"):
        _until(lambda n=name: n in renderer.started)
        renderer.gates[name].set()
    for thread in threads:
        thread.join(10)
    assert renderer.most_at_once == 2 and len(results) == 3


def test_the_estimate_is_the_mean_of_the_measured_renders() -> None:
    now = [0.0]  # a clock the renders move forward: no sleep, no wall-clock time

    def render(seconds: float) -> None:
        now[0] += seconds

    queue = ExportQueue(waiting=3, workers=1, first_guess=9.0, window=2, clock=lambda: now[0])
    assert queue.mean_s() == 9.0 and queue.line().wait_s == 0.0  # nothing running: no wait
    for seconds in (0.05, 0.15):
        queue.run(lambda s=seconds: render(s))
    assert queue.mean_s() == pytest.approx(0.10)
    queue.run(lambda: render(0.25))  # the window keeps the latest two: 0.15 and 0.25
    assert queue.mean_s() == pytest.approx(0.20)
    with pytest.raises(ZeroDivisionError):  # a failed render is not timed, and frees its place
        queue.run(lambda: render(1 / 0))
    assert queue.mean_s() == pytest.approx(0.20) and queue.line().busy == 0
    assert about(0.2) == 1 and about(4.01) == 5 and about(0) == 1


def test_a_waiter_whose_callback_raises_leaves_the_line() -> None:
    queue = ExportQueue(waiting=1, workers=1)
    renderer, results, waits = Renderer(), {}, {}
    first = _submit(queue, renderer, "a", results, waits)
    _until(lambda: renderer.started == ["a"])

    def stop(ahead: int, seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        queue.run(renderer.job("b"), stop)
    assert queue.line().busy == 1 and not queue.line().full  # b's place is free again
    renderer.gates["a"].set()
    first.join(10)
    assert queue.run(lambda: "c") == "c"


def test_a_queue_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="workers >= 1"):
        ExportQueue(waiting=1, workers=0)
