"""Checkpoints of a live run, saved as it trains in the shipped paper models' folder layout, so
each loads as ``paper:<folder>`` and the *Compare two models* page can follow a head over training.

One folder per run (``<task>-<date>-<time>``) under ``settings.CHECKPOINTS_DIR``, one folder per
variant in it (``scaled``, ``unscaled``), one ``step-NNNNNN`` folder per checkpoint holding
``meta.json``, ``model.safetensors`` and ``vocab.json``. Each checkpoint is written into a hidden
temporary folder and renamed into place, so a closed tab, a stopped run or a killed server
leaves only whole checkpoints. The count stays bounded: past ``keep`` checkpoints every other one
is dropped and the interval doubles (the kept ones stay evenly spread over training), and only
the newest ``RUNS_KEPT`` runs are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

from safetensors.torch import save_file

from viz_transformer import settings
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.vocab import WordVocab

EVERY = 50  # steps between two checkpoints of a run, at first
KEEP = 12  # checkpoints per variant before thinning
RUNS_KEPT = 5  # run folders kept under CHECKPOINTS_DIR
STEP = "step-{:06d}"


def step_folder(step: int) -> str:
    """``step-000120``: the folder of the checkpoint after ``step`` updates."""
    return STEP.format(step)


def save_checkpoint(module: Transformer, vocab: WordVocab, meta: dict, folder: Path) -> Path | None:
    """Write ``module`` (float32, tied copies dropped), ``vocab`` and ``meta`` into ``folder``
    atomically (a hidden temporary folder renamed into place). Returns the folder, or None
    when it already exists (the run's last step was saved already)."""
    if folder.exists():
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".tmp-{folder.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        tied = ("tgt_embed.weight", "generator.weight") if module.cfg.tie_embeddings else ()
        state = {
            k: v.detach().to("cpu").contiguous()
            for k, v in module.state_dict().items()
            if k not in tied
        }
        save_file(state, str(tmp / "model.safetensors"))
        vocab.save(tmp / "vocab.json")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))  # last: the folder is whole
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def new_run_folder(task: str, root: Path | None = None) -> Path:
    """A fresh folder for a run of ``task`` under ``root`` (``settings.CHECKPOINTS_DIR``);
    older runs beyond ``RUNS_KEPT`` (this one included) are deleted, oldest first."""
    root = root if root is not None else settings.CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    runs = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    runs.sort(key=lambda p: p.stat().st_mtime)
    for old in runs[: max(0, len(runs) - RUNS_KEPT + 1)]:
        shutil.rmtree(old, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = root / f"{task}-{stamp}"
    n = 1
    while folder.exists():  # two runs in one second
        n += 1
        folder = root / f"{task}-{stamp}-{n}"
    folder.mkdir()
    return folder


class CheckpointSaver:
    """Saves one variant of a run every ``every`` steps, at most about ``keep`` at a time."""

    def __init__(self, folder: Path, every: int = EVERY, keep: int = KEEP) -> None:
        if every < 1 or keep < 2:
            raise ValueError(f"every={every}, keep={keep}: save every 1 step or more, keep 2+.")
        self.folder, self.every, self.keep = folder, every, keep

    def maybe_save(self, step: int, module: Transformer, vocab: WordVocab, meta: dict) -> None:
        """Save at multiples of the current interval; thin out past ``keep``."""
        if step % self.every:
            return
        save_checkpoint(module, vocab, {**meta, "step": step}, self.folder / step_folder(step))
        saved = self.steps()
        if len(saved) > self.keep:
            self.every *= 2
            for old in saved:
                if old % self.every:
                    shutil.rmtree(self.folder / step_folder(old), ignore_errors=True)

    def final(self, step: int, module: Transformer, vocab: WordVocab, meta: dict) -> None:
        """Save the run's last state (kept whatever the interval)."""
        save_checkpoint(module, vocab, {**meta, "step": step}, self.folder / step_folder(step))

    def steps(self) -> list[int]:
        """Steps of the whole checkpoints in the folder, in order."""
        if not self.folder.is_dir():
            return []
        return sorted(int(p.name[5:]) for p in self.folder.glob("step-*") if p.is_dir())
