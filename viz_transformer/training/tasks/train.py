"""Train the paper model on a built-in task and ship it as safetensors + JSON + vocabulary.

``python -m viz_transformer.training.tasks.train --task reverse`` retrains one model
(``--task all`` every one) into ``viz_transformer/weights/paper-<task>/``, on ``--device``
(default ``VT_DEVICE``, else CUDA when present, else the CPU; on CUDA the updates run under bf16
autocast, evaluation in float32). The weights are drawn on the CPU, so a seed gives the same
start on every device. A second run with ``scale_scores=False`` records the loss and
gradient-norm curves without the 1/sqrt(d_k) factor for the softmax page.

Both runs save checkpoints as they train (``training.checkpoints``): a run folder
``paper-<task>-<date>-<time>`` (named after the folder it ships into) under ``--checkpoints``
(default ``VT_CHECKPOINT_DIR``, else ``artifacts/checkpoints``) with ``scaled/`` and
``unscaled/`` folders of ``step-NNNNNN`` checkpoints, every ``--save-every`` steps (default 100;
0: none), thinned to about ``--keep`` (default 12) per variant, each loadable as
``paper:<folder>``.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from viz_transformer.models.devices import default_device
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import greedy_batch, pad_batch
from viz_transformer.settings import CHECKPOINTS_DIR, WEIGHTS_DIR
from viz_transformer.text.vocab import WordVocab
from viz_transformer.training.checkpoints import (
    CheckpointPlan,
    CheckpointSaver,
    add_checkpoint_args,
    plan_from_args,
    weights_state,
)
from viz_transformer.training.steps import device_arg, train_step
from viz_transformer.training.tasks.catalog import TASKS, Task, pairs

SAVE_EVERY = 100  # the CLI's first checkpoint interval: 3,000 steps end with ~8 checkpoints a run


@dataclass(frozen=True)
class TrainSettings:
    steps: int = 3000
    batch_size: int = 64
    warmup: int = 400  # section 5.3's warmup_steps, scaled to a short run
    lr_factor: float = 0.5  # multiplies section 5.3's rate; 1.0 spikes this small post-norm model
    label_smoothing: float = 0.1  # section 5.4
    seed: int = 0
    log_every: int = 25


def _batch(
    vocab: WordVocab, chunk: list[tuple[str, str]], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    src = pad_batch([vocab.encode(s) for s, _ in chunk], vocab.pad_id, device)
    tgt = pad_batch([[vocab.bos_id, *vocab.encode(t)] for _, t in chunk], vocab.pad_id, device)
    return src, tgt


def train_model(
    task: Task,
    vocab: WordVocab,
    cfg: TransformerConfig,
    settings: TrainSettings,
    device: torch.device | None = None,
    saver: CheckpointSaver | None = None,
) -> tuple[Transformer, dict[str, list[float]]]:
    """Adam(0.9, 0.98, 1e-9) with the warmup / inverse-sqrt schedule of section 5.3.

    Args:
        device: where to train; ``default_device()`` when None. The weights are drawn on the CPU
            after ``torch.manual_seed(settings.seed)`` and then moved, so every device starts alike.
        saver: saves checkpoints as the model trains (and its last state), or None.

    Returns:
        the trained model (eval mode, on ``device``) and curves ``{"step", "loss", "grad_norm"}``.
    """
    torch.manual_seed(settings.seed)
    model = Transformer(cfg).to(device if device is not None else default_device())
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: (
            settings.lr_factor
            * cfg.d_model**-0.5
            * min((s + 1) ** -0.5, (s + 1) * settings.warmup**-1.5)
        ),
    )
    data = pairs(task, settings.steps * settings.batch_size // 4, settings.seed, "train")
    rng = random.Random(settings.seed)
    curves: dict[str, list[float]] = {"step": [], "loss": [], "grad_norm": []}
    model.train()
    meta = checkpoint_meta(task, cfg)
    for step in range(1, settings.steps + 1):
        src, tgt = _batch(vocab, rng.sample(data, settings.batch_size), model.pe.device)
        loss, grad_norm = train_step(
            model, opt, sched, src, tgt, vocab.pad_id, settings.label_smoothing
        )
        if step % settings.log_every == 0 or step == 1:
            curves["step"].append(step)
            curves["loss"].append(round(loss.item(), 5))
            curves["grad_norm"].append(round(float(grad_norm), 5))
        if saver is not None:
            saver.maybe_save(step, model, vocab, meta)
    model.eval()
    if saver is not None:
        saver.final(settings.steps, model, vocab, meta)
    return model, curves


def checkpoint_meta(task: Task, cfg: TransformerConfig) -> dict:
    """What a checkpoint's ``meta.json`` records: enough to load it and show its task."""
    scale = "with" if cfg.scale_scores else "without"
    return {
        "name": f"paper-{task.name}",
        "task": task.name,
        "description": f"A checkpoint of training ({scale} 1/√d_k). {task.description}",
        "example": task.example,
        **task.meta_examples(),
        "config": cfg.to_dict(),
        "variant": "scaled" if cfg.scale_scores else "unscaled",
    }


@torch.no_grad()
def exact_match(
    model: Transformer, vocab: WordVocab, data: list[tuple[str, str]], batch_size: int = 256
) -> float:
    """Share of pairs whose greedy output equals the target exactly."""
    hits = 0
    for i in range(0, len(data), batch_size):
        chunk = data[i : i + batch_size]
        sources = [vocab.encode(s) for s, _ in chunk]
        ids = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}
        outs = greedy_batch(model, sources, 40, **ids)
        for out, (_, tgt) in zip(outs, chunk, strict=True):
            hits += vocab.decode(out) == vocab.decode(vocab.encode(tgt))
    return hits / len(data)


def train_task(
    name: str,
    settings: TrainSettings,
    out_dir: Path,
    compare: bool = True,
    n_held_out: int = 2000,
    device: torch.device | None = None,
    checkpoints: CheckpointPlan | None = None,
) -> dict:
    """Train ``paper-<name>`` (and, with ``compare``, again without scaling) on ``device``
    (``default_device()`` when None), evaluate in float32, save. With ``checkpoints``, both
    runs save checkpoints into one new run folder, whose name ``meta.json`` records as
    ``"checkpoints"``."""
    task = TASKS[name]
    vocab = WordVocab.build(task.lexicon, task.detok)
    cfg = TransformerConfig(vocab_size=len(vocab))
    dev = device if device is not None else default_device()
    run, savers = None, dict.fromkeys(("scaled", "unscaled"))
    if checkpoints is not None:  # one run folder, a variant folder for each of the two runs
        run = checkpoints.new_run(out_dir.name)  # named after the model it ships
        savers = {variant: checkpoints.saver(run, variant) for variant in savers}
    start = time.perf_counter()
    model, curves = train_model(task, vocab, cfg, settings, dev, savers["scaled"])
    seconds = time.perf_counter() - start
    unscaled_cfg = TransformerConfig(**{**cfg.to_dict(), "scale_scores": False})
    unscaled_curves = (
        train_model(task, vocab, unscaled_cfg, settings, dev, savers["unscaled"])[1]
        if compare
        else None
    )
    held_out = pairs(task, n_held_out, settings.seed + 1, "held_out")
    accuracy = exact_match(model, vocab, held_out)
    meta = {
        "name": f"paper-{name}",
        "task": name,
        "description": task.description,
        "example": task.example,
        **task.meta_examples(),
        "config": cfg.to_dict(),
        "train": {
            **settings.__dict__,
            "seconds": round(seconds, 1),
            "threads": torch.get_num_threads(),
            "device": _device_name(dev),
        },
        "held_out": {"n": n_held_out, "seed": settings.seed + 1, "exact_match": accuracy},
        "total_seconds": round(time.perf_counter() - start, 1),  # both runs and the evaluation
        "curves": {"scaled": curves, "unscaled": unscaled_curves},
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        **({"checkpoints": run.name} if run is not None else {}),  # the run folder's name
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(weights_state(model), str(out_dir / "model.safetensors"))
    vocab.save(out_dir / "vocab.json")
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    return meta


def _device_name(dev: torch.device) -> str:
    """``cpu``, or ``cuda:0 (NVIDIA H100 80GB HBM3)``: what ``meta.json`` records."""
    if dev.type == "cuda":
        return f"{dev} ({torch.cuda.get_device_name(dev)})"
    return str(dev)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", default="all", choices=[*TASKS, "all"])
    parser.add_argument("--steps", type=int, default=TrainSettings.steps)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR)
    parser.add_argument(
        "--device",
        type=device_arg,
        default=None,
        help="cpu, cuda, cuda:1, mps (default: VT_DEVICE, else cuda when present, else cpu)",
    )
    parser.add_argument(
        "--no-compare", action="store_true", help="skip the second run without 1/sqrt(d_k)"
    )
    add_checkpoint_args(parser, SAVE_EVERY)
    args = parser.parse_args(argv)
    plan = plan_from_args(parser, args)
    root = plan.root if plan is not None and plan.root is not None else CHECKPOINTS_DIR
    settings = TrainSettings(steps=args.steps, seed=args.seed)
    try:
        device = args.device or default_device()
    except ValueError as exc:  # VT_DEVICE names a device this machine lacks
        parser.error(str(exc))
    for name in TASKS if args.task == "all" else [args.task]:
        out = args.out / f"paper-{name}"
        meta = train_task(name, settings, out, not args.no_compare, device=device, checkpoints=plan)
        print(
            f"paper-{name}: held-out exact match {meta['held_out']['exact_match']:.4f} "
            f"after {meta['train']['seconds']} s on {meta['train']['device']}"
            + (f"; checkpoints in {root / meta['checkpoints']}" if "checkpoints" in meta else "")
        )


if __name__ == "__main__":
    main()
