"""Checkpoints of a training run, saved as it trains in the shipped paper models' folder layout,
so each loads as ``paper:<folder>`` and the *Compare two models* page can follow a head over
training. Live training, the built-in tasks (``tasks.train``) and the distillation of
``paper-en-pt`` (``en_pt.distill``) all save through ``CheckpointSaver``.

One folder per run (``<name>-<date>-<time>``: ``reverse-...`` for a live run, ``paper-reverse-...``
or ``paper-en-pt-...`` for the offline trainings) under ``settings.CHECKPOINTS_DIR``, one folder
per variant in it (``scaled``, ``unscaled``), one ``step-NNNNNN`` folder per checkpoint holding
``meta.json``, ``model.safetensors`` and the tokenizer (``vocab.json``, or ``spm.model``). Each
checkpoint is written into a hidden temporary folder and renamed into place, and a checkpoint
that goes is renamed to a hidden folder before it is deleted, so Ctrl+C, a closed tab or a killed
process leaves only whole checkpoints (and at worst a hidden leftover, which no listing shows).
The count stays bounded: past ``keep`` checkpoints every other one is dropped and the interval
doubles (the kept ones stay evenly spread over training), and only the newest ``RUNS_KEPT`` runs
of one name are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from viz_transformer import settings
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.text.vocab import WordVocab

EVERY = 50  # steps between two checkpoints of a run, at first
KEEP = 12  # checkpoints per variant before thinning
RUNS_KEPT = 5  # run folders of one name kept under CHECKPOINTS_DIR
STEP = "step-{:06d}"
Tokenizer = WordVocab | SentencePieceVocab


def step_folder(step: int) -> str:
    """``step-000120``: the folder of the checkpoint after ``step`` updates."""
    return STEP.format(step)


def weights_state(module: Transformer, dtype: torch.dtype = torch.float32) -> dict:
    """``module``'s tensors on the CPU in ``dtype``, contiguous, ready for ``save_file``; the tied
    copies are dropped (safetensors refuses shared storage; loading restores them)."""
    tied = ("tgt_embed.weight", "generator.weight") if module.cfg.tie_embeddings else ()
    return {
        k: v.detach().to("cpu", dtype).contiguous()
        for k, v in module.state_dict().items()
        if k not in tied
    }


def save_checkpoint(
    module: Transformer,
    vocab: Tokenizer,
    meta: dict,
    folder: Path,
    dtype: torch.dtype = torch.float32,
) -> Path | None:
    """Write ``module`` (in ``dtype``), ``vocab`` and ``meta`` into ``folder`` atomically (a
    hidden temporary folder renamed into place). Returns the folder, or None when it already
    exists (the run's last step was saved already)."""
    if folder.exists():
        return None
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".tmp-{folder.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        save_file(weights_state(module, dtype), str(tmp / "model.safetensors"))
        if isinstance(vocab, WordVocab):
            vocab.save(tmp / "vocab.json")
        else:
            shutil.copyfile(vocab.path, tmp / MODEL_FILE)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


def discard(folder: Path) -> None:
    """Delete ``folder`` so that it is never seen half deleted: renamed to a hidden name first."""
    hidden = folder.parent / f".old-{folder.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.replace(folder, hidden)
    except FileNotFoundError:
        return
    shutil.rmtree(hidden, ignore_errors=True)


def new_run_folder(name: str, root: Path | None = None, runs_kept: int = RUNS_KEPT) -> Path:
    """A fresh folder ``<name>-<date>-<time>`` for a run under ``root``
    (``settings.CHECKPOINTS_DIR``); older runs of the same ``name`` beyond ``runs_kept`` (this one
    included) are deleted, oldest first. Runs of other names stay: a live run of ``reverse``
    never deletes a ``paper-reverse`` or ``paper-en-pt`` training's checkpoints."""
    root = root if root is not None else settings.CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    same = re.compile(rf"{re.escape(name)}-\d{{8}}-\d{{6}}(-\d+)?")
    runs = [p for p in root.iterdir() if p.is_dir() and same.fullmatch(p.name)]
    runs.sort(key=lambda p: p.stat().st_mtime)
    for old in runs[: max(0, len(runs) - runs_kept + 1)]:
        discard(old)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = root / f"{name}-{stamp}"
    n = 1
    while folder.exists():  # two runs in one second
        n += 1
        folder = root / f"{name}-{stamp}-{n}"
    folder.mkdir()
    return folder


class CheckpointSaver:
    """Saves one variant of a run every ``every`` steps, at most about ``keep`` at a time.

    Attributes:
        folder: the variant's folder (``<run>/scaled``); every, keep: the current interval and
            the bound; last: the latest step ``maybe_save`` was told of (0: none yet).
    """

    def __init__(
        self,
        folder: Path,
        every: int = EVERY,
        keep: int = KEEP,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if every < 1 or keep < 2:
            raise ValueError(f"every={every}, keep={keep}: save every 1 step or more, keep 2+.")
        self.folder, self.every, self.keep, self.dtype = folder, every, keep, dtype
        self.last = 0

    def maybe_save(self, step: int, module: Transformer, vocab: Tokenizer, meta: dict) -> None:
        """Save at multiples of the current interval; thin out past ``keep``."""
        self.last = step
        if step % self.every:
            return
        self._write(step, module, vocab, meta)
        saved = self.steps()
        if len(saved) > self.keep:
            self.every *= 2
            for old in saved:
                if old % self.every:
                    discard(self.folder / step_folder(old))

    def final(self, step: int, module: Transformer, vocab: Tokenizer, meta: dict) -> None:
        """Save the run's last state (kept whatever the interval)."""
        self._write(step, module, vocab, meta)

    def _write(self, step: int, module: Transformer, vocab: Tokenizer, meta: dict) -> None:
        folder = self.folder / step_folder(step)
        save_checkpoint(module, vocab, {**meta, "step": step}, folder, self.dtype)

    def steps(self) -> list[int]:
        """Steps of the whole checkpoints in the folder, in order."""
        if not self.folder.is_dir():
            return []
        return sorted(int(p.name[5:]) for p in self.folder.glob("step-*") if p.is_dir())


@dataclass(frozen=True)
class CheckpointPlan:
    """How an offline training saves checkpoints: into a new run folder under ``root``
    (``settings.CHECKPOINTS_DIR`` when None), every ``every`` steps at first, about ``keep`` per
    variant."""

    every: int = EVERY
    keep: int = KEEP
    root: Path | None = None

    def new_run(self, name: str) -> Path:
        """A fresh run folder for ``name`` (``paper-reverse``): ``new_run_folder``."""
        return new_run_folder(name, self.root)

    def saver(
        self, run: Path, variant: str = "scaled", dtype: torch.dtype = torch.float32
    ) -> CheckpointSaver:
        """The saver of ``variant`` (``scaled``, ``unscaled``) of ``run``."""
        return CheckpointSaver(run / variant, self.every, self.keep, dtype)


def add_checkpoint_args(parser: argparse.ArgumentParser, every: int) -> None:
    """``--save-every N`` (0: no checkpoints), ``--keep K`` and ``--checkpoints DIR``."""
    parser.add_argument(
        "--save-every",
        type=int,
        default=every,
        metavar="N",
        help=f"save a checkpoint every N steps, the interval doubling past --keep (default "
        f"{every}; 0: none)",
    )
    parser.add_argument(
        "--keep",
        type=int,
        default=KEEP,
        metavar="K",
        help=f"checkpoints kept per variant (default {KEEP})",
    )
    parser.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        metavar="DIR",
        help="where run folders go (default VT_CHECKPOINT_DIR, else artifacts/checkpoints)",
    )


def plan_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> CheckpointPlan | None:
    """The plan ``add_checkpoint_args``'s flags ask for (None: ``--save-every 0``); bad values
    end the command with a one-line error."""
    if args.save_every == 0:
        return None
    if args.save_every < 0 or args.keep < 2:
        parser.error(f"--save-every {args.save_every} --keep {args.keep}: give N >= 0, K >= 2.")
    root = args.checkpoints if args.checkpoints is not None else settings.CHECKPOINTS_DIR
    try:  # before hours of training, not after
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(
            f"cannot save checkpoints in {root} ({exc.strerror}): give --checkpoints "
            "DIR, or --save-every 0."
        )
    return CheckpointPlan(args.save_every, args.keep, root)
