"""Training runs save checkpoints in the paper-model layout (``training.checkpoints``): every N
steps, thinned to a bounded count, written atomically (a killed process leaves only whole
checkpoints), listed for the compare page and loadable as ``paper:<folder>``. Live training here;
the built-in tasks and the distillation: ``test_training_checkpoints``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.models.checkpoints import checkpoint_runs
from viz_transformer.models.registry import forget_memory_models
from viz_transformer.training import checkpoints
from viz_transformer.training.checkpoints import CheckpointSaver, new_run_folder
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
        (tmp_path / f"reverse-20260101-00000{i}").mkdir()
        os.utime(tmp_path / f"reverse-20260101-00000{i}", (1e9 + i, 1e9 + i))  # oldest first
    other = tmp_path / "paper-reverse-20260101-000000"  # an offline training's run: not live's
    other.mkdir()
    trainer = LiveTrainer()
    trainer.start("reverse", seconds=3, save_every=10)
    trainer.stop(timeout=60)  # stops after the current step: the final checkpoints are whole
    snap = trainer.snapshot()
    runs = checkpoint_runs(tmp_path)
    assert {r.variant for r in runs} == {"scaled", "unscaled"}
    assert all(r.run == Path(snap.checkpoints).name for r in runs)
    assert len(list(tmp_path.glob("reverse-*"))) == checkpoints.RUNS_KEPT
    assert not (tmp_path / "reverse-20260101-000000").exists() and other.is_dir()
    for r in runs:
        assert vt.load_model(r.names[-1]).spec.task == "reverse"


# A process that saves checkpoints 1-3 of a variant (every step, keep 3), then SIGKILLs itself
# while saving the 4th: in the middle of writing it, or in the middle of deleting checkpoint 1
# when the 4th thins the folder (argv: the run folder, "writing" or "deleting").
KILLED = """
import os, shutil, signal, sys
from pathlib import Path
import viz_transformer as vt
from viz_transformer.training import checkpoints

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

def delete_midway_then_die(path, *args, **kwargs):
    (Path(path) / "vocab.json").unlink()  # rmtree had got this far
    die()

def write_then_die(state, path):
    real_save_file(state, path)  # the weights are on disk, meta.json not yet
    die()

model = vt.load_model("paper-reverse")
saver = checkpoints.CheckpointSaver(Path(sys.argv[1]) / "scaled", every=1, keep=3)
real_save_file = checkpoints.save_file
for step in range(1, 5):
    if step == 4 and sys.argv[2] == "writing":
        checkpoints.save_file = write_then_die
    if step == 4 and sys.argv[2] == "deleting":
        shutil.rmtree = delete_midway_then_die
    saver.maybe_save(step, model.module, model.vocab, {**model.meta, "name": "killed"})
sys.exit(3)
"""


@pytest.mark.parametrize(
    ("moment", "whole", "leftover"),
    [("writing", (1, 2, 3), ".tmp-step-000004-*"), ("deleting", (2, 3, 4), ".old-step-000001-*")],
)
def test_a_process_killed_while_saving_leaves_only_whole_checkpoints(
    tmp_path: Path, moment: str, whole: tuple[int, ...], leftover: str
) -> None:
    run = tmp_path / "killed-20260101-000000"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KILLED, str(run), moment], env=env, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert len(list((run / "scaled").glob(leftover))) == 1  # killed where the test meant
    (listed,) = checkpoint_runs(tmp_path)
    assert listed.steps == whole  # the hidden leftover is not listed
    assert CheckpointSaver(run / "scaled").steps() == list(whole)
    for name in listed.names:
        assert sorted(p.name for p in Path(name[6:]).iterdir()) == [
            "meta.json",
            "model.safetensors",
            "vocab.json",
        ]
        assert vt.trace(vt.load_model(name), "happy king red ship").output_text
