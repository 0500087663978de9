"""A bounded line for slow jobs that share one machine (figure exports, each a headless browser):
``workers`` run at once, at most ``waiting`` more wait in the order they came, and one more is
refused at once with a message that says when to try again. Waits are estimated from the mean
time of the last jobs. No Streamlit: the app's download requests and a test drive it alike."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class QueueFull(RuntimeError):
    """The line is full; the message says how many jobs are ahead and when to try again."""


@dataclass(frozen=True)
class Line:
    """The line as a new job would find it.

    Attributes:
        busy: jobs running or waiting.
        full: whether a new job would be refused.
        wait_s: about how long a new job would wait before it starts.
        each_s: the mean time of one job (measured, or the first guess before any).
        refusal: what a job refused now is told.
    """

    busy: int
    full: bool
    wait_s: float
    each_s: float
    refusal: str


def about(seconds: float) -> int:
    """Whole seconds to tell a person: at least 1."""
    return max(1, math.ceil(seconds))


def saving(busy: int) -> str:
    """ "1 figure is being saved", "3 figures are being saved"."""
    return "1 figure is being saved" if busy == 1 else f"{busy} figures are being saved"


class ExportQueue:
    """``run(job)`` in arrival order, ``workers`` at a time, ``waiting`` more in line at most.

    Args:
        waiting: how many jobs may wait while ``workers`` run; one more raises ``QueueFull``.
        workers: how many run at once.
        first_guess: seconds a job is taken to last until one has been measured.
        window: how many of the latest jobs' times the mean is taken over.
        clock: seconds from a fixed start (``time.perf_counter``; a test passes its own).
    """

    def __init__(
        self,
        waiting: int,
        workers: int = 1,
        first_guess: float = 3.0,
        window: int = 20,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if waiting < 0 or workers < 1:
            raise ValueError(f"need waiting >= 0 and workers >= 1, not {waiting}, {workers}.")
        self.waiting, self.workers = waiting, workers
        self._first_guess, self._clock = first_guess, clock
        self._times: deque[float] = deque(maxlen=window)
        self._line: deque[object] = deque()  # tickets of waiting jobs, first in line first
        self._running = 0
        self._cond = threading.Condition()

    def mean_s(self) -> float:
        """The mean time of the latest jobs, or the first guess before any has finished."""
        with self._cond:
            return self._mean()

    def line(self) -> Line:
        """How the line stands now, for a page to show before anyone clicks."""
        with self._cond:
            busy = self._running + len(self._line)
            return Line(busy, self._full(), self._wait(busy), self._mean(), self._refusal())

    def run(self, job: Callable[[], T], on_wait: Callable[[int, float], None] | None = None) -> T:
        """Run ``job`` when its turn comes and return what it returns.

        Args:
            job: the work (a render); its time is measured when it returns.
            on_wait: called once, before waiting, with the number of jobs ahead and about how
                many seconds the wait will last; not called when the job starts at once.

        Raises:
            QueueFull: ``workers`` jobs run and ``waiting`` wait already (raised at once).
        """
        ticket = object()
        with self._cond:
            if self._full():
                raise QueueFull(self._refusal())
            ahead = self._running + len(self._line)
            self._line.append(ticket)
            must_wait, wait_s = not self._my_turn(ticket), self._wait(ahead)
        try:
            if must_wait and on_wait is not None:
                on_wait(ahead, wait_s)
            with self._cond:
                self._cond.wait_for(lambda: self._my_turn(ticket))
                self._line.popleft()
                self._running += 1
        except BaseException:  # a callback that raised, or an interrupt: leave the line
            with self._cond:
                if ticket in self._line:
                    self._line.remove(ticket)
                self._cond.notify_all()
            raise
        start = self._clock()
        finished = False
        try:
            result = job()
            finished = True
            return result
        finally:
            with self._cond:
                self._running -= 1
                if finished:
                    self._times.append(self._clock() - start)
                self._cond.notify_all()

    def _refusal(self) -> str:
        """How many are in line, and about when the next place frees (one job's mean time)."""
        busy = self._running + len(self._line)
        retry = about(self._mean() / self.workers)
        return f"{saving(busy)}; try again in about {retry} s."

    def _my_turn(self, ticket: object) -> bool:
        return self._line[0] is ticket and self._running < self.workers

    def _full(self) -> bool:
        return self._running + len(self._line) >= self.workers + self.waiting

    def _mean(self) -> float:
        return sum(self._times) / len(self._times) if self._times else self._first_guess

    def _wait(self, ahead: int) -> float:
        """About how long a job with ``ahead`` jobs before it waits before it starts."""
        return math.ceil(max(0, ahead - self.workers + 1) / self.workers) * self._mean()
