"""The checkpoints that training runs saved, listed for loading as ``paper:<folder>``.

A run folder (``training.checkpoints`` writes them under ``settings.CHECKPOINTS_DIR``: live runs,
the built-in tasks' ``tasks.train``, the distillation ``en_pt.distill``) holds one folder per
variant (``scaled``, ``unscaled``) of ``step-NNNNNN`` checkpoint folders. Only whole checkpoints
are listed (hidden temporary folders of a write or a deletion in progress are not).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from viz_transformer import settings
from viz_transformer.models.paper_spec import META, PREFIX, WEIGHTS


@dataclass(frozen=True)
class CheckpointRun:
    """One variant of one run: its checkpoints in training order.

    Attributes:
        run: the run folder's name (``reverse-20261125-141200``); variant: ``scaled`` or
            ``unscaled``; steps: updates done at each checkpoint; names: ``paper:<folder>``
            of each, in the same order.
    """

    run: str
    variant: str
    steps: tuple[int, ...]
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        """``reverse-20261125-141200 (scaled, 9 checkpoints)``: what a picker shows."""
        return f"{self.run} ({self.variant}, {len(self.steps)} checkpoints)"


def _steps(variant: Path) -> list[tuple[int, Path]]:
    found = []
    for folder in variant.glob("step-*"):
        whole = (folder / META).is_file() and (folder / WEIGHTS).is_file()
        if whole and folder.name[5:].isdigit():
            found.append((int(folder.name[5:]), folder))
    return sorted(found)


def checkpoint_runs(root: Path | None = None) -> list[CheckpointRun]:
    """Every variant of every run under ``root`` (``settings.CHECKPOINTS_DIR``) with at least
    one whole checkpoint, newest run first."""
    root = root if root is not None else settings.CHECKPOINTS_DIR
    if not root.is_dir():
        return []
    runs = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    out = []
    for run in sorted(runs, key=lambda p: p.stat().st_mtime, reverse=True):
        for variant in sorted(p for p in run.iterdir() if p.is_dir()):
            steps = _steps(variant)
            if steps:
                out.append(
                    CheckpointRun(
                        run.name,
                        variant.name,
                        tuple(s for s, _ in steps),
                        tuple(f"{PREFIX}{f.resolve()}" for _, f in steps),
                    )
                )
    return out
