"""Corpus statistics computed in the background for the app, one job per model and corpus.

A job runs ``vt.corpus_stats``'s computation (``analysis.corpus.api.compute``) in a thread and
records its progress (``records.progress``); every session that asks for the same folder (same
model weights, same corpus) gets the same job, so two sessions computing one corpus compute it
once and both watch it. Each batch is one shard on disk, so the page shows every finished batch
while the job runs; Stop sets the job's ``StopToken``: the thread ends after its batch, the
shards written stay, and Run goes on from there.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import viz_transformer as vt
from viz_transformer.analysis.corpus.api import compute
from viz_transformer.records.progress import Progress, ProgressMeter, StopToken

BATCH = 64  # sentences run at once: the fastest measured on paper-en-pt (bench/bench_corpus.py)


@dataclass
class CorpusJob:
    """One background run of corpus statistics and what a page shows of it.

    Attributes:
        folder: where its shards go; meter: its progress (``meter.last``: sentences done,
            rate, time left); stop: Stop sets it, and the thread ends after its batch;
        error: why it failed, shown by the page; thread: the thread computing it.
    """

    folder: Path
    meter: ProgressMeter = field(default_factory=lambda: ProgressMeter("sentences"))
    stop: StopToken = field(default_factory=StopToken)
    error: str | None = None
    thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    @property
    def progress(self) -> Progress:
        """The latest report: ``progress.text()`` is what the page writes under its bar."""
        return self.meter.last


_JOBS: dict[Path, CorpusJob] = {}
_LOCK = threading.Lock()


def job(folder: Path) -> CorpusJob | None:
    """The job of ``folder`` in this server, if one was started."""
    with _LOCK:
        return _JOBS.get(folder)


def start(model: vt.LoadedModel, sentences: Sequence[str], folder: Path) -> CorpusJob:
    """Start computing ``folder`` unless a job is already running it; that job either way."""
    with _LOCK:
        current = _JOBS.get(folder)
        if current is not None and current.running:
            return current
        new = CorpusJob(folder, ProgressMeter("sentences", total=len(sentences)))
        new.thread = threading.Thread(
            target=_run,
            args=(new, model, list(sentences)),
            name=f"corpus-{folder.name}",
            daemon=True,
        )
        _JOBS[folder] = new
        new.thread.start()
        return new


def _run(job: CorpusJob, model: vt.LoadedModel, sentences: list[str]) -> None:
    try:
        # a shard per batch: a Stop keeps every finished batch on disk, and the page shows them
        compute(
            model,
            sentences,
            job.folder,
            batch_size=BATCH,
            progress=job.meter.update,
            shard_size=BATCH,
            stop=job.stop,
        )
    except (ValueError, RuntimeError, OSError) as exc:  # shown by the page, never raised there
        job.error = str(exc)
