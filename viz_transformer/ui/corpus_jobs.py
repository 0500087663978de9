"""Corpus statistics computed in the background for the app, one job per model and corpus.

A job runs ``vt.corpus_stats``'s computation (``analysis.corpus.api.compute``) in a thread and
records its progress; every session that asks for the same folder (same model weights, same
corpus) gets the same job, so two sessions computing one corpus compute it once and both watch
it. Stop sets the job's event: the thread ends after its batch and the shards written stay, so
Run goes on from there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import viz_transformer as vt
from viz_transformer.analysis.corpus.api import compute
from viz_transformer.ui import jobs

BATCH = 64  # sentences run at once: the fastest measured on paper-en-pt (bench/bench_corpus.py)


@dataclass
class Job:
    """One background run and what a page shows of it."""

    folder: Path
    total: int
    done: int = 0
    first: int | None = None  # sentences already done when it started (a resumed run)
    started: float = field(default_factory=time.monotonic)
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def update(self, done: int, total: int) -> None:
        if self.first is None:
            self.first, self.started = done, time.monotonic()
        self.done, self.total = done, total

    def rate(self) -> float:
        """Sentences per second since this run started (0 before its first batch)."""
        elapsed = time.monotonic() - self.started
        return (self.done - (self.first or 0)) / elapsed if elapsed > 0 else 0.0

    def label(self) -> str:
        """``"512/1,000 sentences, 43.2 sentences/s, about 11 s left"`` (``jobs.eta``'s words)."""
        first = self.first or 0
        part = (self.done - first) / max(self.total - first, 1)  # of what this run computes
        left = jobs.eta(time.monotonic() - self.started, part)
        return f"{self.done:,}/{self.total:,} sentences, {self.rate():.1f} sentences/s{left}"


_JOBS: dict[Path, Job] = {}
_LOCK = threading.Lock()


def job(folder: Path) -> Job | None:
    """The job of ``folder`` in this server, if one was started."""
    with _LOCK:
        return _JOBS.get(folder)


def start(model: vt.LoadedModel, sentences: Sequence[str], folder: Path) -> Job:
    """Start computing ``folder`` unless a job is already running it; that job either way."""
    with _LOCK:
        current = _JOBS.get(folder)
        if current is not None and current.running:
            return current
        new = Job(folder, len(sentences))
        new.thread = threading.Thread(target=_run, args=(new, model, list(sentences)),
                                      name=f"corpus-{folder.name}", daemon=True)  # fmt: skip
        _JOBS[folder] = new
        new.thread.start()
        return new


def _run(job: Job, model: vt.LoadedModel, sentences: list[str]) -> None:
    try:
        compute(model, sentences, job.folder, batch_size=BATCH, progress=job.update, stop=job.stop)
    except (ValueError, RuntimeError, OSError) as exc:  # shown by the page, never raised there
        job.error = str(exc)
