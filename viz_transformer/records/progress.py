"""Progress and Stop of every long job: one record, one meter, one stop token.

A long job (corpus statistics, What heads do's experiments, a live training run, the CLI) reports
how far it is as a count: ``(done, total)`` in units such as sentences, or a fraction as
``(fraction, 1)``. ``ProgressMeter`` turns those reports into ``Progress`` records (rate and time
left counted from the first report, so a resumed run's kept work does not inflate its rate).

Stop, one way for every job: a job that can be stopped takes a ``stop: StopToken | None``
argument. Anyone sets the token (a Stop button, another session, any thread); the job calls
``check()`` between two units of work, which raises ``Cancelled`` once it is set; what was
finished before stays. A job that reports progress checks at each report: ``with_stop(report,
stop)`` is the callback it passes down (each greedy step, each batch of heads, every 0.25 s of a
pass), so a new job with a progress callback gets its Stop points for free. A progress callback
reports and never stops a job on purpose; a job still leaves the model as it was when anything
raises from it (the app's own Streamlit ends a page's run at its next ``st`` call, which the
page's progress callback makes; a command's Ctrl-C is Python's ``KeyboardInterrupt``, which ends
the process: ``corpus`` keeps its written shards for the next run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

OnFraction = Callable[[float], None]  # called with the fraction of the job done, 0..1
OnCount = Callable[[int, int], None]  # called with (units done, units in all)
Report = TypeVar("Report", bound=Callable[..., None])


class Cancelled(Exception):
    """Raised between two units of work once the job's ``StopToken`` is set."""


class StopToken:
    """Set from any thread to stop a job between two units of work.

    Args:
        also: an extra condition that counts as set (e.g. a Stop recorded in a session), read
            at every ``is_set``; None for none.
    """

    def __init__(self, also: Callable[[], bool] | None = None) -> None:
        self._event = threading.Event()
        self._also = also

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set() or (self._also is not None and self._also())

    def check(self) -> None:
        """Raise ``Cancelled`` if the token is set; return at once otherwise."""
        if self.is_set():
            raise Cancelled


def with_stop(report: Report | None, stop: StopToken | None) -> Report | None:
    """``report`` (an ``OnFraction`` or ``OnCount``) followed by ``stop.check()``: the callback
    a job passes down, so every progress point is a Stop point (a Stop set during the report,
    or any time before, ends the job there). Without ``stop``, ``report`` itself; with ``stop``
    but no ``report``, a callback that only checks."""
    if stop is None:
        return report

    def both(*args: Any) -> None:
        if report is not None:
            report(*args)
        stop.check()  # raises Cancelled once set

    return cast(Report, both)


def time_left(seconds: float) -> str:
    """``"about 1 min 20 s left"`` (whole seconds)."""
    left = round(seconds)
    return f"about {left // 60} min {left % 60} s left" if left >= 60 else f"about {left} s left"


@dataclass(frozen=True)
class Progress:
    """How far a job is.

    Attributes:
        done, total: units done and in all (a fraction: ``total`` = 1).
        unit: what is counted (``"sentences"``); empty for a fraction.
        rate: units per second since the job's first report (0 before any work).
        left: seconds left at that rate; None when unknown (no rate yet, under a second of
            work, or finished).
    """

    done: float
    total: float
    unit: str = ""
    rate: float = 0.0
    left: float | None = None

    @property
    def fraction(self) -> float:
        """``done / total`` within 0..1 (a progress bar refuses more than 1)."""
        return min(1.0, max(0.0, self.done / self.total)) if self.total > 0 else 0.0

    def text(self) -> str:
        """``"512/1,000 sentences, 43.2 sentences/s, about 11 s left"``, or for a fraction
        ``"42%, about 11 s left"``; the time left only when known."""
        left = "" if self.left is None else f", {time_left(self.left)}"
        if not self.unit:
            return f"{self.fraction:.0%}{left}"
        return (
            f"{int(self.done):,}/{int(self.total):,} {self.unit}, "
            f"{self.rate:,.1f} {self.unit}/s{left}"
        )


class ProgressMeter:
    """Turns ``(done, total)`` reports into ``Progress`` records.

    The rate counts from the first report (a resumed job first reports the work it kept), the
    time left follows from it once a second of work has passed.

    Args:
        unit: what is counted; empty for fractions.
        total: the units in all, for ``last`` before the first report.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(
        self, unit: str = "", total: float = 1, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.unit, self._clock = unit, clock
        self._first: tuple[float, float] | None = None  # (time, done) of the first report
        self.last = Progress(0, total, unit)

    def update(self, done: float, total: float) -> Progress:
        """The record of this report (also kept as ``last``)."""
        now = self._clock()
        if self._first is None:
            self._first = (now, done)
        began, first = self._first
        elapsed = now - began
        rate = (done - first) / elapsed if elapsed > 0 else 0.0
        known = rate > 0 and elapsed >= 1 and done < total
        self.last = Progress(done, total, self.unit, rate, (total - done) / rate if known else None)
        return self.last
