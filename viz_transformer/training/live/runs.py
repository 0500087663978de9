"""One live training at a time per server, shared by every session (the classroom-safe part).

``shared_trainer()`` is the process's one ``LiveTrainer``: ``start`` trains in a background
thread (with 1/sqrt(d_k) and, beside it, without, alternating steps in that one thread so the
run stays within ``threads`` CPU threads), ``snapshot`` copies curves and the latest traces for
any thread to read, ``stop`` ends the run and joins its thread. A second ``start`` while a run
is in progress raises a ``RuntimeError`` that says so; every run ends by its time limit.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from viz_transformer.models.registry import forget_memory_models
from viz_transformer.records.progress import StopToken
from viz_transformer.records.trace import Trace
from viz_transformer.training.checkpoints import EVERY, CheckpointSaver, new_run_folder
from viz_transformer.training.live.train import (
    PREFIX,
    LiveRun,
    LiveStep,
    check_arguments,
    torch_threads,
)

RunState = Literal["idle", "running", "done", "stopped", "failed"]
LABELS = {True: "with 1/√d_k", False: "without 1/√d_k"}  # run label by scale_scores
CURVE_KEYS = ("step", "seconds", "loss", "exact_match")
DEFAULT_SECONDS = 120


@dataclass(frozen=True)
class LiveSnapshot:
    """A consistent copy of the server's live run, safe to read from any thread.

    Attributes:
        state: idle (never started), running, done (time limit), stopped, failed.
        task, limit: the run's task and time limit in seconds; elapsed: wall seconds so far.
        curves: run label -> ``{"step", "seconds", "loss", "exact_match"}`` lists.
        traces: run label -> the probe's latest trace; outputs: its latest greedy output.
        models: names ``load_model`` offers once the run has ended.
        checkpoints: the run's checkpoint folder (``training.checkpoints``), or empty
            when none could be made.
        message: why a run failed, else empty.
        run_id: increases with every start (0: none yet); version: with every report.
    """

    state: RunState = "idle"
    task: str = ""
    limit: float = 0.0
    elapsed: float = 0.0
    curves: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    traces: dict[str, Trace] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    message: str = ""
    checkpoints: str = ""
    run_id: int = 0
    version: int = 0


class LiveTrainer:
    """The background job: at most one run at a time, readable and stoppable from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = StopToken()  # records.progress: the one Stop of every long job
        self._thread: threading.Thread | None = None
        self._snap = LiveSnapshot()
        self._started = 0.0

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(
        self,
        task: str = "reverse",
        seconds: float = DEFAULT_SECONDS,
        threads: int = 1,
        seed: int = 0,
        compare: bool = True,
        size: str = "tiny",
        save_every: int = EVERY,
    ) -> int:
        """Start a run (and, with ``compare``, the unscaled twin with the same seed), saving
        checkpoints every ``save_every`` steps into a new run folder (``checkpoints``).

        Returns:
            the new run's id.

        Raises:
            RuntimeError: a run is in progress (watch it, or stop it first).
            ValueError: a bad task, size, time limit or thread count.
        """
        limit = check_arguments(task, seconds, threads, size)
        with self._lock:
            if self.running():
                raise RuntimeError(
                    f"A live run ({self._snap.task}) is in progress, started "
                    f"{time.monotonic() - self._started:.0f} s ago: watch it, or stop it first."
                )
            scales = (True, False) if compare else (True,)
            forget_memory_models(PREFIX)  # the previous run's models: memory stays bounded
            self._stop.clear()
            self._started = time.monotonic()
            try:
                folder: Path | None = new_run_folder(task)
            except OSError:  # a read-only disk: the run goes on without checkpoints
                folder = None
            self._snap = LiveSnapshot(
                state="running",
                task=task,
                limit=limit,
                curves={LABELS[scale]: _empty() for scale in scales},
                run_id=self._snap.run_id + 1,
                checkpoints=str(folder or ""),
            )
            self._thread = threading.Thread(
                target=self._job,
                args=(
                    limit,
                    threads,
                    [(task, seed, scale, size) for scale in scales],
                    folder,
                    save_every,
                ),
                name="vt-live-training",
                daemon=True,
            )
            self._thread.start()
            return self._snap.run_id

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the run to end after its current step and wait for its thread."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def snapshot(self) -> LiveSnapshot:
        """The current state, curves and traces (a copy: later steps do not change it)."""
        with self._lock:
            snap = self._snap
            elapsed = time.monotonic() - self._started if snap.state == "running" else snap.elapsed
            return replace(
                snap,
                elapsed=elapsed,
                curves={k: {c: list(v) for c, v in run.items()} for k, run in snap.curves.items()},
                traces=dict(snap.traces),
                outputs=dict(snap.outputs),
            )

    def _job(
        self,
        limit: float,
        threads: int,
        args: list[tuple[str, int, bool, str]],
        folder: Path | None,
        save_every: int,
    ) -> None:
        state: RunState = "done"
        message, models = "", ()
        try:
            with torch_threads(threads):
                runs = [LiveRun(*a) for a in args]  # here: the first costs seconds (imports)
                savers = [_saver(folder, run, save_every) for run in runs]
                every = runs[0].settings.report_every
                self._record(runs)
                while time.monotonic() - self._started < limit and not self._stop.is_set():
                    for run, saver in zip(runs, savers, strict=True):  # alternate: same share
                        run.step()
                        if saver is not None:
                            saver.maybe_save(
                                run.step_count, run.module, run.vocab, run.checkpoint_meta()
                            )
                    if runs[0].step_count % every == 0:
                        self._record(runs)
                for run, saver in zip(runs, savers, strict=True):
                    if saver is not None:
                        saver.final(run.step_count, run.module, run.vocab, run.checkpoint_meta())
                self._record(runs)
                models = tuple(run.finish().name for run in runs)
            state = "stopped" if self._stop.is_set() else "done"
        except Exception as exc:  # shown in the page; the server goes on
            state, message = "failed", f"{type(exc).__name__}: {exc}"
        with self._lock:
            elapsed = time.monotonic() - self._started
            self._snap = replace(
                self._snap, state=state, elapsed=elapsed, message=message, models=models
            )

    def _record(self, runs: list[LiveRun]) -> None:
        reports = [(LABELS[run.module.cfg.scale_scores], run.report()) for run in runs]
        with self._lock:
            snap = self._snap
            curves = {k: {c: list(v) for c, v in run.items()} for k, run in snap.curves.items()}
            for label, rep in reports:
                _append(curves[label], rep)
            self._snap = replace(
                snap,
                curves=curves,
                version=snap.version + 1,
                traces={**snap.traces, **{label: r.trace for label, r in reports}},
                outputs={**snap.outputs, **{label: r.output for label, r in reports}},
            )


def _saver(folder: Path | None, run: LiveRun, every: int) -> CheckpointSaver | None:
    return None if folder is None else CheckpointSaver(folder / run.variant, every)


def _empty() -> dict[str, list[float]]:
    return {key: [] for key in CURVE_KEYS}


def _append(curve: dict[str, list[float]], rep: LiveStep) -> None:
    if rep.step and (not curve["step"] or curve["step"][-1] != rep.step):
        for key in CURVE_KEYS:
            curve[key].append(float(getattr(rep, key)))


_SHARED = LiveTrainer()


def shared_trainer() -> LiveTrainer:
    """The process's one trainer: every Streamlit session sees and stops the same run."""
    return _SHARED
