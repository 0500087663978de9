"""Word-level knowledge distillation for ``paper-en-pt``: the teacher's whole next-word
distribution at every target position, not only the words of its translation.

The corpus is already sequence-level distillation (Kim & Rush, 2016): the student learns the
teacher's translations as if they were references. With ``DistillSettings.kd_weight`` > 0 the
loss also pulls the student's distribution towards the teacher's at each position of those
translations, read from the PyTorch port of the teacher (``student_init.load_teacher``) run teacher-
forced on the same batch. It tells the student how much the teacher preferred "adiado" over
"atrasado", not merely which one it wrote.

The port runs one unpadded source length per call (its attention has no padding mask), so a
batch is split by source length; targets are padded on the right, which the decoder (SSRU and
cross-attention only) never reads back. Student id ``i`` is teacher id ``i - ADDED``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from viz_transformer.networks.marian import BergamotTransformer
from viz_transformer.networks.paper import Transformer
from viz_transformer.training.steps import autocast, forced_loss, update


@torch.no_grad()
def teacher_log_probs(
    teacher: BergamotTransformer, src: list[list[int]], tgt: list[list[int]], offset: int
) -> torch.Tensor:
    """The teacher's log-probabilities at every position a student batch predicts.

    Args:
        src: per sentence the student's source ids (ending with ``</s>``, no padding).
        tgt: per sentence ``<s>`` + target ids + ``</s>`` (student ids), as ``train_step``
            reads them: position t predicts ``tgt[t + 1]``.
        offset: student id = teacher id + ``offset`` (``student_init.ADDED``).

    Returns:
        (B, T - 1, student vocabulary) float32 on the teacher's device, T the longest ``tgt``;
        the ids the teacher lacks (``<pad>``, ``<s>``) get log-probability -1e4 (probability 0),
        and so does every id past a sentence's end (the loss skips those positions).
    """
    device = teacher.embed.weight.device
    width = max(len(t) for t in tgt) - 1
    out = torch.full((len(src), width, teacher.cfg.vocab_size + offset), -1e4, device=device)
    for length in sorted({len(s) for s in src}):
        rows = [i for i, s in enumerate(src) if len(s) == length]
        ids = torch.tensor([src[i] for i in rows], device=device) - offset
        # decoder inputs: the zero start vector, then the target words without </s>
        words = [tgt[i][1:-1] for i in rows]
        longest = max(len(w) for w in words)
        outputs = torch.tensor(
            [[x - offset for x in w] + [0] * (longest - len(w)) for w in words], device=device
        ).reshape(len(rows), longest)
        logits = teacher.decode(teacher.encode(ids), outputs)  # (b, longest + 1, V)
        out[rows, : longest + 1, offset:] = F.log_softmax(logits.float(), dim=-1)
    return out


def kd_train_step(
    model: Transformer,
    opt: torch.optim.Optimizer,
    sched: torch.optim.lr_scheduler.LRScheduler,
    src: torch.Tensor,
    tgt: torch.Tensor,
    teacher_lp: torch.Tensor,
    pad_id: int,
    label_smoothing: float,
    kd_weight: float,
    clip: float = float("inf"),
) -> tuple[torch.Tensor, torch.Tensor]:
    """``train_step`` with ``kd_weight`` of the loss the cross-entropy against the teacher's
    distribution ``teacher_lp`` (from ``teacher_log_probs``) and the rest the label-smoothed
    cross-entropy against its translation. Returns the loss and the gradient norm."""
    with autocast(src.device):
        hard, logits = forced_loss(model, src, tgt, pad_id, label_smoothing)
        gold = tgt[:, 1:]
        log_p = F.log_softmax(logits.float(), dim=-1)
        keep = (gold != pad_id).float()  # (B, T-1)
        soft = -(teacher_lp.exp() * log_p).sum(-1)  # (B, T-1): cross-entropy to the teacher
        soft = (soft * keep).sum() / keep.sum()
        loss = (1 - kd_weight) * hard + kd_weight * soft
    return loss, update(model, opt, sched, loss, clip)
