"""The one teacher-forced update both offline projects train with (``tasks.train`` and
``en_pt``): label-smoothed cross-entropy, backward, clip, optimiser and schedule step, bf16
autocast on CUDA, and the ``--device`` argument of their commands."""

from __future__ import annotations

import argparse
import contextlib

import torch
import torch.nn.functional as F

from viz_transformer.models.devices import check_device
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import source_mask


def autocast(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """bf16 autocast on a CUDA device that has it (matmuls at tensor-core speed, float32 master
    weights and optimiser), nothing elsewhere: the CPU and evaluation stay float32."""
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def device_arg(text: str) -> torch.device:
    """``--device`` of the training commands: ``check_device``'s ValueError as a usage error."""
    try:
        return check_device(text, f"--device {text}")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def train_step(
    model: Transformer,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    src: torch.Tensor,
    tgt: torch.Tensor,
    pad_id: int,
    label_smoothing: float,
    clip: float = float("inf"),
) -> tuple[torch.Tensor, torch.Tensor]:
    """One teacher-forced update: decoder input ``tgt[:, :-1]`` predicts ``tgt[:, 1:]``.

    Args:
        src: (B, S) source ids; tgt: (B, T) ``<s>`` + target ids + ``</s>``, padded with pad_id,
            both on the model's device (bf16 autocast there when it is CUDA).
        clip: gradient-norm clipping (inf: none, as in the paper).

    Returns:
        the label-smoothed loss and the gradient norm before clipping (tensors on the device:
        reading them waits for the GPU, so callers read them only when they log).
    """
    with autocast(src.device):
        loss = forced_loss(model, src, tgt, pad_id, label_smoothing)[0]
    return loss, update(model, opt, sched, loss, clip)


def forced_loss(
    model: Transformer, src: torch.Tensor, tgt: torch.Tensor, pad_id: int, label_smoothing: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher forcing (``tgt[:, :-1]`` predicts ``tgt[:, 1:]``): the label-smoothed
    cross-entropy over the non-pad positions and the logits (B, T-1, V)."""
    logits = model(src, tgt[:, :-1], source_mask(src, pad_id))
    loss = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        tgt[:, 1:].reshape(-1),
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
    )
    return loss, logits


def update(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    loss: torch.Tensor,
    clip: float,
) -> torch.Tensor:
    """Backpropagate ``loss``, clip the gradient norm at ``clip``, step the optimiser and the
    rate schedule. Returns the gradient norm before clipping (a tensor on the device)."""
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    sched.step()
    return grad_norm
