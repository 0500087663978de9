"""Live training saves checkpoints in the paper-model layout: every N steps, thinned to a bounded
count, written atomically, listed for the compare page and loadable as ``paper:<folder>``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.models.checkpoints import checkpoint_runs
from viz_transformer.models.registry import forget_memory_models
from viz_transformer.training.live import checkpoints
from viz_transformer.training.live.checkpoints import CheckpointSaver, new_run_folder
from viz_transformer.training.live.runs import LiveTrainer
from viz_transformer.training.live.train import PREFIX, train_live


@pytest.fixture(autouse=True)
def no_live_models() -> Iterator[None]:
    yield
    forget_memory_models(PREFIX)


def test_a_run_saves_thinned_checkpoints_that_load_and_drift(tmp_path: Path) -> None:
    run = new_run_folder("reverse", tmp_path)
    model = train_live("reverse", seed=0, max_steps=24, save_to=run, save_every=10)
    (listed,) = checkpoint_runs(tmp_path)
    assert listed.run == run.name and listed.variant == "scaled"
    assert listed.steps == (10, 20, 24)  # every 10 steps, and the last
    last = vt.load_model(listed.names[-1])
    text = "happy king red ship"
    assert vt.trace(last, text).output_text == vt.trace(model, text).output_text
    assert np.array_equal(vt.trace(last, text).cross, vt.trace(model, text).cross)
    drift = vt.drift(listed.names, [text], kind="cross")
    assert drift.shape == (3, 2, 2) and np.all(drift[-1] == 0) and drift[0].max() > 0
    assert not list(run.rglob(".tmp-*"))


def test_past_keep_every_other_checkpoint_goes_and_the_interval_doubles(tmp_path: Path) -> None:
    module = vt.load_model("paper-reverse")
    saver = CheckpointSaver(tmp_path / "scaled", every=10, keep=4)
    meta = {**module.meta, "name": "x"}
    for step in range(1, 101):
        saver.maybe_save(step, module.module, module.vocab, meta)
    saver.final(103, module.module, module.vocab, meta)
    assert saver.steps() == [40, 80, 103] and saver.every == 40


def test_a_write_that_fails_midway_leaves_no_checkpoint(tmp_path: Path, monkeypatch) -> None:
    module = vt.load_model("paper-reverse")

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoints, "save_file", broken)
    folder = tmp_path / "scaled" / "step-000010"
    with pytest.raises(OSError, match="disk full"):
        checkpoints.save_checkpoint(module.module, module.vocab, module.meta, folder)
    assert not folder.exists() and list((tmp_path / "scaled").iterdir()) == []
    assert checkpoint_runs(tmp_path) == []


def test_the_servers_run_saves_both_variants_and_old_runs_go(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(checkpoints.settings, "CHECKPOINTS_DIR", tmp_path)
    for i in range(checkpoints.RUNS_KEPT):
        (tmp_path / f"old-{i}").mkdir()
    trainer = LiveTrainer()
    trainer.start("reverse", seconds=3, save_every=10)
    trainer.stop(timeout=60)  # stops after the current step: the final checkpoints are whole
    snap = trainer.snapshot()
    runs = checkpoint_runs(tmp_path)
    assert {r.variant for r in runs} == {"scaled", "unscaled"}
    assert all(r.run == Path(snap.checkpoints).name for r in runs)
    assert len([p for p in tmp_path.iterdir()]) == checkpoints.RUNS_KEPT
    for r in runs:
        assert vt.load_model(r.names[-1]).spec.task == "reverse"
