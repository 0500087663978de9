"""The run without 1/sqrt(d_k) that ``paper-en-pt``'s softmax page shows beside the shipped one
(``distill unscaled``): the same start and recipe, Eq. 1 without its scale, curves only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from viz_transformer.models.devices import default_device
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.training.en_pt.bitext import read_corpus
from viz_transformer.training.en_pt.distill_loop import DistillSettings, train_model
from viz_transformer.training.en_pt.student_init import start_student

UNSCALED_MINUTES = 10.0  # the run without 1/sqrt(d_k) that ``all`` records
UNSCALED_NOTES = {  # the softmax page's caption under this model's two runs
    "teacher": (
        "Both runs start from the teacher's weights, encoder frozen, on the same batches. "
        "Without 1/√d_k every score is √d_k = √32 ≈ 5.7 times larger than the teacher's weights "
        "were trained for: the frozen encoder's softmax saturates and only the decoder can adapt. "
        "The run without the scale took {steps:,} steps ({minutes} minutes)."
    ),
    "scratch": (
        "Both runs start from the same random weights, on the same batches. The run without "
        "the scale took {steps:,} steps ({minutes} minutes)."
    ),
}


def record_unscaled(
    folder: Path,
    out_dir: Path,
    minutes: float,
    settings: DistillSettings,
    device: torch.device | None = None,
) -> dict[str, Any]:
    """Train the shipped run's recipe again without 1/sqrt(d_k) (Eq. 1) for ``minutes`` and add
    its curves to ``out_dir/meta.json`` as ``curves["unscaled"]`` (its weights are not kept):
    the softmax page then shows this model's own runs with and without the scale."""
    device = device if device is not None else default_device()
    meta = json.loads((out_dir / "meta.json").read_text())
    shipped = TransformerConfig.from_dict(meta["config"])
    cfg_args = {k: v for k, v in shipped.to_dict().items() if k != "vocab_size"}
    # the same start as the shipped run (with init "teacher": the teacher's weights, now read
    # without the scale)
    vocab, model = start_student(folder, {**cfg_args, "scale_scores": False}, settings)
    model = model.to(device)
    train = read_corpus(folder, "train")
    curves = train_model(model, vocab, train, settings, minutes, lambda *_: None, print)
    meta["curves"]["unscaled"] = curves
    meta["curves_note"] = UNSCALED_NOTES[settings.init].format(
        steps=curves["step"][-1], minutes=round(minutes)
    )
    meta["unscaled_run"] = {"minutes": minutes, "steps": curves["step"][-1], "init": settings.init}
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    return meta
