"""The training loop of ``paper-en-pt`` (``distill``): settings, length-grouped batches, Adam
with section 5.3's warmup and inverse-square-root rate, label smoothing, a wall-clock budget."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import pad_batch
from viz_transformer.text.spm import SentencePieceVocab
from viz_transformer.training.en_pt.distill_kd import kd_train_step
from viz_transformer.training.steps import train_step

SoftTargets = Callable[[list[list[int]], list[list[int]]], torch.Tensor]


@dataclass(frozen=True)
class DistillSettings:
    """Training settings; the optimiser and schedule are section 5.3's, scaled to a short run."""

    steps: int = 100_000  # an upper bound: the wall-clock budget usually ends training first
    batch_size: int = 1200  # padded target tokens per batch (batches group similar lengths)
    warmup: int = 400
    lr_factor: float = 0.3  # multiplies section 5.3's rate: peak 9.4e-4 (2.2e-3 stalled at loss 6)
    label_smoothing: float = 0.1  # section 5.4
    seed: int = 0
    log_every: int = 25
    dev_size: int = 300  # held-out pairs that choose the best epoch
    init: str = "teacher"  # "teacher": start from the teacher's weights; "scratch": random
    freeze_encoder: bool = True  # with init "teacher": the encoder and embeddings stay its own
    kd_weight: float = 0.0  # share of the loss that matches the teacher's distribution (distill_kd)


def length_batches(
    ids: list[tuple[list[int], list[int]]], max_tokens: int, rng: random.Random
) -> list[list[int]]:
    """Indices of ``ids`` grouped by length so a batch holds about ``max_tokens`` target tokens.

    Sorting by length before batching wastes little compute on padding; the batch order is shuffled.
    """
    order = sorted(range(len(ids)), key=lambda i: (len(ids[i][1]), len(ids[i][0]), rng.random()))
    batches, current, widest = [], [], 0
    for i in order:
        widest = max(widest, len(ids[i][1]) + 1, len(ids[i][0]))
        if current and widest * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, widest = [], max(len(ids[i][1]) + 1, len(ids[i][0]))
        current.append(i)
    batches.append(current)
    rng.shuffle(batches)
    return batches


def _train_mode(model: Transformer) -> None:
    """Training mode, except a frozen encoder, which runs as at inference (no dropout)."""
    model.train()
    if not any(p.requires_grad for p in model.encoder.parameters()):
        model.encoder.eval()


def _schedule(settings: DistillSettings, d_model: int) -> Callable[[int], float]:
    """Section 5.3's rate: linear warmup, then inverse square root of the step."""
    return lambda s: (
        settings.lr_factor * d_model**-0.5 * min((s + 1) ** -0.5, (s + 1) * settings.warmup**-1.5)
    )


def train_model(
    model: Transformer,
    vocab: SentencePieceVocab,
    pairs: list[tuple[str, str]],
    settings: DistillSettings,
    minutes: float,
    on_epoch: Callable[[int, dict[str, list[float]]], None],
    log: Callable[[str], None] = print,
    resume: tuple[int, int, dict[str, list[float]]] | None = None,
    soft_targets: SoftTargets | None = None,
    on_step: Callable[[int], None] | None = None,
) -> dict[str, list[float]]:
    """Train ``model`` in place for at most ``minutes`` of wall clock (Adam, warmup, smoothing).

    ``settings.steps`` caps the updates; ``on_epoch(epoch, curves)`` runs after every full pass
    (and at the time limit) so the best model so far can be saved. ``resume=(steps, epochs,
    curves)`` continues a run whose weights ``model`` holds: the rate schedule goes on from
    ``steps`` (after a 100-step ramp, since Adam's moments start afresh) and the curves extend.
    ``soft_targets(sources, targets)``: the teacher's log-probabilities for a batch's id lists
    (``distill_kd.teacher_log_probs``); with it and ``settings.kd_weight`` > 0 the updates are
    ``kd_train_step``'s (word-level distillation). ``on_step(step)`` runs after every update
    (the count includes ``resume``'s steps): ``distill`` saves checkpoints with it.

    Returns:
        curves ``{"step", "loss", "grad_norm"}``.
    """
    done, epoch, old = resume or (0, 0, {})
    torch.manual_seed(settings.seed + done)
    rng = random.Random(settings.seed + done)
    ids = [(vocab.encode(s), [vocab.bos_id, *vocab.encode(t)]) for s, t in pairs]
    trained = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trained, lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    rate = _schedule(settings, model.cfg.d_model)
    ramp = 100 if done else 0
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: rate(s + done) * min(1.0, (s + 1) / ramp if ramp else 1.0)
    )
    curves: dict[str, list[float]] = {
        k: list(old.get(k, [])) for k in ("step", "loss", "grad_norm")
    }
    start, step = time.perf_counter(), done
    _train_mode(model)
    while step < settings.steps and time.perf_counter() - start < minutes * 60:
        epoch += 1
        for batch in length_batches(ids, settings.batch_size, rng):
            src = pad_batch([ids[i][0] for i in batch], vocab.pad_id, model.pe.device)
            tgt = pad_batch([ids[i][1] for i in batch], vocab.pad_id, model.pe.device)
            if soft_targets is not None and settings.kd_weight > 0:
                lp = soft_targets([ids[i][0] for i in batch], [ids[i][1] for i in batch])
                loss, grad_norm = kd_train_step(
                    model,
                    opt,
                    sched,
                    src,
                    tgt,
                    lp,
                    vocab.pad_id,
                    settings.label_smoothing,
                    settings.kd_weight,
                    clip=5.0,
                )
            else:
                loss, grad_norm = train_step(
                    model, opt, sched, src, tgt, vocab.pad_id, settings.label_smoothing, clip=5.0
                )
            step += 1
            if on_step is not None:
                on_step(step)
            if step % settings.log_every == 0 or step == 1:
                curves["step"].append(step)
                curves["loss"].append(round(loss.item(), 5))
                curves["grad_norm"].append(round(float(grad_norm), 5))
                log(
                    f"epoch {epoch} step {step} loss {loss.item():.3f} "
                    f"{time.perf_counter() - start:.0f} s"
                )
            if step >= settings.steps or time.perf_counter() - start > minutes * 60:
                break
        model.eval()
        on_epoch(epoch, curves)
        _train_mode(model)
    model.eval()
    return curves
