"""The offline trainings save checkpoints as they train, through the live runs' saver: the
built-in tasks (``tasks.train``, both variants) and the distillation (``en_pt.distill``, float16).
Each checkpoint loads as ``paper:<folder>``, traces, and the runs are listed for the compare page
and its drift chart. Tiny runs of a handful of steps (the distillation on a tiny offline corpus)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

import viz_transformer as vt
from viz_transformer.models.checkpoints import CheckpointRun, checkpoint_runs
from viz_transformer.testing.distill import TINY_SETTINGS, TINY_STUDENT, write_tiny_corpus
from viz_transformer.training.checkpoints import CheckpointPlan
from viz_transformer.training.en_pt.distill import train_and_ship
from viz_transformer.training.tasks import train as task_train
from viz_transformer.training.tasks.train import TrainSettings, train_task

CPU = torch.device("cpu")


def _loads_traces_and_drifts(run: CheckpointRun, text: str, kind: str, layers: int, heads: int):
    """Every checkpoint loads and traces ``text`` (rows of probabilities); the drift over them
    is ``[checkpoints, layers, heads]`` with a zero last row."""
    for name in run.names:
        trace = vt.trace(vt.load_model(name), text)
        patterns = getattr(trace, kind)
        assert patterns.shape[:2] == (layers, heads)
        np.testing.assert_allclose(patterns.sum(-1), 1.0, atol=1e-5)
    drift = vt.drift(run.names, [text], kind=kind)
    assert drift.shape == (len(run.names), layers, heads)
    assert np.all(drift[-1] == 0) and np.all(drift >= 0)


def test_a_task_training_saves_bounded_checkpoints_of_both_variants(tmp_path: Path) -> None:
    plan = CheckpointPlan(every=2, keep=4, root=tmp_path / "runs")
    settings = TrainSettings(steps=16, batch_size=16, warmup=4, log_every=4)
    out = tmp_path / "paper-reverse"
    meta = train_task("reverse", settings, out, n_held_out=20, device=CPU, checkpoints=plan)
    runs = checkpoint_runs(plan.root)
    assert {r.variant for r in runs} == {"scaled", "unscaled"}
    assert {r.run for r in runs} == {meta["checkpoints"]}  # one run folder, named in meta.json
    assert meta["checkpoints"].startswith("paper-reverse-")
    # every 2 steps, thinned past 4 to every 4: evenly spread, the last step kept
    assert all(r.steps == (4, 8, 12, 16) for r in runs)
    scaled = next(r for r in runs if r.variant == "scaled")
    text = "happy king red ship"
    _loads_traces_and_drifts(scaled, text, "encoder", 2, 4)
    last, shipped = vt.load_model(scaled.names[-1]), vt.load_model(f"paper:{out}")
    assert np.array_equal(vt.trace(last, text).encoder, vt.trace(shipped, text).encoder)
    unscaled = next(r for r in runs if r.variant == "unscaled")
    assert vt.load_model(unscaled.names[-1]).module.cfg.scale_scores is False
    assert not list(plan.root.rglob(".tmp-*")) and not list(plan.root.rglob(".old-*"))


def test_a_distillation_saves_float16_checkpoints_that_load(tmp_path: Path) -> None:
    write_tiny_corpus(tmp_path / "corpus", ["big", "small", "red"], 40)
    plan = CheckpointPlan(every=2, keep=3, root=tmp_path / "runs")
    settings = replace(TINY_SETTINGS, steps=12)
    out = tmp_path / "paper-en-pt"
    meta = train_and_ship(tmp_path / "corpus", out, TINY_STUDENT, 1.0, settings, None, CPU, plan)
    (run,) = checkpoint_runs(plan.root)
    assert Path(meta["checkpoints"]).name == run.run and run.run.startswith("paper-en-pt-")
    assert run.variant == "scaled" and run.steps == (4, 8, 12)
    with safe_open(Path(run.names[-1][len("paper:") :]) / "model.safetensors", "pt") as f:
        assert f.get_tensor(next(iter(f.keys()))).dtype == torch.float16  # as shipped
    spec = vt.load_model(run.names[0]).spec
    assert (spec.source_lang, spec.target_lang) == ("en", "pt")
    _loads_traces_and_drifts(run, "the big cat", "encoder", 1, 2)


def test_the_command_checks_its_checkpoint_flags(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").touch()
    bad = {
        ("--keep", "1"): "--keep 1: give N >= 0, K >= 2.",
        ("--checkpoints", str(tmp_path / "file" / "x")): "cannot save checkpoints in",
    }
    for flags, message in bad.items():  # a one-line error before any training
        with pytest.raises(SystemExit) as exit_info:
            task_train.main(["--task", "reverse", *flags])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
