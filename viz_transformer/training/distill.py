"""Distil the shipped Bergamot EN->PT translator into the paper's Transformer (``paper-en-pt``).

By default the student starts from its teacher (``student_init``): the teacher's vocabulary,
embeddings, encoder and decoder cross-attention and FFNs, with the encoder kept frozen, so only
the decoder learns (its masked self-attention from scratch, in place of the teacher's SSRU).
``--init scratch`` trains a student of the given size from random weights with its own vocabulary.

``python -m viz_transformer.training.distill corpus --out artifacts/en-pt`` rebuilds the corpus
offline (``corpus_en_pt``: WordNet and chatterbot sentences plus templates, translated by the
wheel's native engine: sequence-level knowledge distillation); ``spm`` trains the shared
SentencePiece vocabulary, ``train`` trains and ships the model (``--resume`` continues a shipped
run),
``evaluate`` measures chrF against the teacher on the held-out split; ``all`` runs them in turn.
``--device`` picks where training and evaluation run (default ``VT_DEVICE``, else CUDA when
present, else the CPU; bf16 autocast for the updates on CUDA, translation in float32).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from viz_transformer.models.devices import default_device
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import greedy_decode, pad_batch, source_mask
from viz_transformer.settings import ARTIFACTS_DIR, WEIGHTS_DIR
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab, train_sentencepiece
from viz_transformer.training.corpus_en_pt import build_corpus, read_corpus
from viz_transformer.training.student_init import (
    student_from_teacher,
    teacher_config,
    teacher_vocab,
)
from viz_transformer.training.train import device_arg, train_step

CORPUS_DIR = ARTIFACTS_DIR / "en-pt"
OUT_DIR = WEIGHTS_DIR / "paper-en-pt"
# what a student started from the teacher may choose; the rest is the teacher's
TEACHER_FREE = ("n_decoder_layers", "dropout", "max_len", "scale_scores")
TEACHER_WARMUP = 200  # a student that starts from the teacher needs a shorter warmup
UNSCALED_MINUTES = 10.0  # the run without 1/sqrt(d_k) that ``all`` records
SAMPLE_SIZE = 200  # held-out pairs shipped for the test of the recorded score
# the size of a student trained from scratch (``--init scratch``)
MODEL_CONFIG = {"d_model": 256, "n_heads": 8, "n_encoder_layers": 3, "n_decoder_layers": 3,
                "d_ff": 1024, "dropout": 0.05, "max_len": 256}  # fmt: skip


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


def train_vocab(folder: Path, vocab_size: int = 8000) -> Path:
    """Train the shared SentencePiece model on both sides of the training pairs (section 3.4)."""
    texts = [t for pair in read_corpus(folder, "train") for t in pair]
    return train_sentencepiece(texts, folder / "spm", vocab_size)


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


def freeze_encoder(model: Transformer) -> None:
    """Keep the embeddings (tied: source, target and output layer), the output bias and the
    encoder as they are: only the decoder layers learn."""
    for p in [model.src_embed.weight, *model.encoder.parameters()]:
        p.requires_grad_(False)
    if model.generator.bias is not None:
        model.generator.bias.requires_grad_(False)


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
) -> dict[str, list[float]]:
    """Train ``model`` in place for at most ``minutes`` of wall clock (Adam, warmup, smoothing).

    ``settings.steps`` caps the updates; ``on_epoch(epoch, curves)`` runs after every full pass
    (and at the time limit) so the best model so far can be saved. ``resume=(steps, epochs,
    curves)`` continues a run whose weights ``model`` holds: the rate schedule goes on from
    ``steps`` (after a 100-step ramp, since Adam's moments start afresh) and the curves extend.

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
            loss, grad_norm = train_step(
                model, opt, sched, src, tgt, vocab.pad_id, settings.label_smoothing, clip=5.0
            )
            step += 1
            if step % settings.log_every == 0 or step == 1:
                curves["step"].append(step)
                curves["loss"].append(round(loss.item(), 5))
                curves["grad_norm"].append(round(float(grad_norm), 5))
                log(f"epoch {epoch} step {step} loss {loss.item():.3f} "
                    f"{time.perf_counter() - start:.0f} s")  # fmt: skip
            if step >= settings.steps or time.perf_counter() - start > minutes * 60:
                break
        model.eval()
        on_epoch(epoch, curves)
        _train_mode(model)
    model.eval()
    return curves


@torch.no_grad()
def translate(
    model: Transformer, vocab: SentencePieceVocab, texts: list[str], batch_size: int = 64
) -> list[str]:
    """Greedy translations of ``texts``, batched by length; outputs stop at 2x the source + 10."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = [""] * len(texts)
    for k in range(0, len(order), batch_size):
        chunk = order[k : k + batch_size]
        seqs = [vocab.encode(texts[i]) for i in chunk]
        src = pad_batch(seqs, vocab.pad_id, model.pe.device)
        mask = source_mask(src, vocab.pad_id)  # (B, 1, 1, S)
        max_new = min(model.cfg.max_len - 1, 2 * src.shape[1] + 10)
        outs = greedy_decode(
            model,
            model.encode(src, mask),
            max_new,
            bos_id=vocab.bos_id,
            eos_id=vocab.eos_id,
            src_mask=mask,
        )
        for i, ids in zip(chunk, outs, strict=True):
            out[i] = vocab.decode(ids)
    return out


def scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """chrF (sacrebleu, 0-100) of ``hypotheses`` against the teacher and the identical share."""
    import sacrebleu

    same = sum(h.strip() == r.strip() for h, r in zip(hypotheses, references, strict=True))
    return {
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "identical": round(same / len(references), 4),
        "n": len(references),
    }


def save_model(
    model: Transformer, vocab: SentencePieceVocab, out_dir: Path, meta: dict[str, Any]
) -> None:
    """Write fp16 safetensors (tied copies dropped, as train.py does), spm.model and meta.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tied = ("tgt_embed.weight", "generator.weight") if model.cfg.tie_embeddings else ()
    state = {
        k: v.detach().to("cpu", torch.float16).contiguous()
        for k, v in model.state_dict().items()
        if k not in tied
    }
    save_file(state, str(out_dir / "model.safetensors"))
    if vocab.path.resolve() != (out_dir / MODEL_FILE).resolve():
        shutil.copyfile(vocab.path, out_dir / MODEL_FILE)
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))


def train_and_ship(
    folder: Path,
    out_dir: Path,
    cfg_args: dict[str, Any],
    minutes: float,
    settings: DistillSettings,
    resume_from: Path | None = None,
    device: torch.device | None = None,
) -> dict[str, Any]:
    """Train ``paper-en-pt`` on ``folder``'s corpus, keep the epoch with the best held-out chrF
    (``resume_from``: continue the run shipped in that folder; only a better dev score saves).
    ``device``: where to train and evaluate, ``default_device()`` when None; the weights are
    drawn on the CPU first, so a seed starts alike everywhere."""
    device = device if device is not None else default_device()
    train, test = read_corpus(folder, "train"), read_corpus(folder, "held_out")
    vocab, model = _start(folder, cfg_args, settings)
    model = model.to(device)
    cfg = model.cfg
    dev = test[: settings.dev_size]  # picks the epoch; the full held-out set scores the result
    log_file = (folder / "train.log").open("a", encoding="utf-8")

    def log(line: str) -> None:
        print(line, file=log_file, flush=True)

    best = {"chrf": -1.0}
    resume, before = None, 0.0
    if resume_from is not None:  # go on from a shipped run: its weights, steps, curves, score
        # it keeps the vocabulary its embeddings were trained with, whatever the corpus folder
        # holds (a rebuilt corpus retrains ``spm.model``), and the shipped size
        model, vocab, old = load_shipped(resume_from, device)
        cfg = model.cfg
        if settings.init == "teacher" and settings.freeze_encoder:
            freeze_encoder(model)
        resume = (old["curves"]["scaled"]["step"][-1], old["epochs"], old["curves"]["scaled"])
        before = old["seconds"]
        # the bar to beat is the resumed model's score on this corpus's dev set, which differs
        # from the recorded one when the corpus was rebuilt with more sources
        model.eval()
        best.update(scores(translate(model, vocab, [s for s, _ in dev]), [t for _, t in dev]))
        model.train()
        log(f"resuming {resume_from} after {resume[0]} steps, {resume[1]} epochs, dev {best} "
            f"(recorded {old['dev']})")  # fmt: skip
    start = time.perf_counter()

    def on_epoch(epoch: int, curves: dict[str, list[float]]) -> None:
        dev_scores = scores(translate(model, vocab, [s for s, _ in dev]), [t for _, t in dev])
        log(f"epoch {epoch} dev {dev_scores}")
        if dev_scores["chrf"] > best["chrf"]:
            best.update(dev_scores)
            meta = _meta(cfg, settings, minutes, {"train": len(train), "held_out": len(test)})
            seconds = round(before + time.perf_counter() - start, 1)
            meta.update(epochs=epoch, seconds=seconds, steps=curves["step"][-1])
            meta.update(dev=dev_scores, curves={"scaled": curves})
            if resume is not None:
                meta["train"]["resumed_after_steps"] = resume[0]
            save_model(model, vocab, out_dir, meta)

    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log(f"training {n_params} parameters on {len(train)} pairs, on {device}, "
        f"{torch.get_num_threads()} threads")  # fmt: skip
    train_model(model, vocab, train, settings, minutes, on_epoch, log, resume)
    meta = evaluate(out_dir, test, device, settings.dev_size)
    log(f"held-out {meta['held_out']}")
    return meta


def _start(
    folder: Path, cfg_args: dict[str, Any], settings: DistillSettings
) -> tuple[SentencePieceVocab, Transformer]:
    """The vocabulary and the untrained student: the teacher's (``settings.init == "teacher"``,
    its vocabulary written to ``folder/teacher``) or random weights of ``cfg_args``'s size
    reading ``folder``'s own vocabulary. Weights are drawn on the CPU."""
    torch.manual_seed(settings.seed)
    if settings.init == "teacher":
        vocab = SentencePieceVocab.load(teacher_vocab(folder / "teacher"))
        cfg = teacher_config(**{k: v for k, v in cfg_args.items() if k in TEACHER_FREE})
        model = student_from_teacher(cfg)
        if settings.freeze_encoder:
            freeze_encoder(model)
        return vocab, model
    if settings.init != "scratch":
        raise ValueError(f"init={settings.init!r}: use 'teacher' or 'scratch'.")
    vocab = SentencePieceVocab.load(folder / MODEL_FILE)
    return vocab, Transformer(TransformerConfig(vocab_size=len(vocab), **cfg_args))


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
    vocab, model = _start(folder, {**cfg_args, "scale_scores": False}, settings)
    model = model.to(device)
    train = read_corpus(folder, "train")
    curves = train_model(model, vocab, train, settings, minutes, lambda *_: None, print)
    meta["curves"]["unscaled"] = curves
    meta["unscaled_run"] = {"minutes": minutes, "steps": curves["step"][-1],
                            "init": settings.init}  # fmt: skip
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    return meta


def evaluate(
    out_dir: Path,
    test: list[tuple[str, str]],
    device: torch.device | None = None,
    dev_size: int = DistillSettings.dev_size,
) -> dict[str, Any]:
    """Score the shipped model (on ``device``, the CPU when None) on ``test`` against the
    teacher; record it in ``meta.json`` and ship a sample of ``test`` past its first
    ``dev_size`` pairs (the dev set that picked the epoch) for the tests to re-translate."""
    model, vocab, meta = load_shipped(out_dir, device)
    hyps = translate(model, vocab, [s for s, _ in test])
    meta["held_out"] = scores(hyps, [t for _, t in test])
    # drawn from the whole held-out set but the dev head (which picked the epoch), so every
    # source family is in it in proportion, as in the recorded score
    rest = test[dev_size:]
    sample = random.Random(0).sample(rest, min(SAMPLE_SIZE, len(rest)))
    (out_dir / "held_out_sample.json").write_text(
        json.dumps([list(p) for p in sample], indent=0, ensure_ascii=False)
    )
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    return meta


def _meta(cfg: TransformerConfig, settings: DistillSettings, minutes: float,
          counts: dict[str, int]) -> dict[str, Any]:  # fmt: skip
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
        ),
        "example": "I am a student.",
        "config": cfg.to_dict(),
        "train": {**asdict(settings), "minutes": minutes, "threads": torch.get_num_threads()},
        "data": counts,
        "tokenizer": {"kind": "sentencepiece", "file": MODEL_FILE},
        "retrain": "python -m viz_transformer.training.distill all",
    }


def load_shipped(
    out_dir: Path = OUT_DIR, device: torch.device | None = None
) -> tuple[Transformer, SentencePieceVocab, dict[str, Any]]:
    """The shipped module (float32, eval mode, on ``device``: the CPU when None), its vocabulary
    and its ``meta.json``."""
    meta = json.loads((out_dir / "meta.json").read_text())
    model = Transformer(TransformerConfig.from_dict(meta["config"]))
    state = {k: v.float() for k, v in load_file(str(out_dir / "model.safetensors")).items()}
    model.load_state_dict(state, strict=False)  # the tied copies are absent on purpose
    model = model.to(device if device is not None else torch.device("cpu")).eval()
    return model, SentencePieceVocab.load(out_dir / MODEL_FILE), meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("step", choices=["corpus", "spm", "train", "unscaled", "evaluate", "all"])
    parser.add_argument("--data", type=Path, default=CORPUS_DIR)
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--shard", type=int, default=0)
    parser.add_argument("--shards", type=int, default=1)
    parser.add_argument("--minutes", type=float, default=40.0, help="wall-clock training budget")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--d-model", type=int, default=MODEL_CONFIG["d_model"])
    parser.add_argument("--heads", type=int, default=MODEL_CONFIG["n_heads"])
    parser.add_argument("--layers", type=int, default=MODEL_CONFIG["n_encoder_layers"],
                        help="encoder layers, and as many decoder layers")  # fmt: skip
    parser.add_argument("--d-ff", type=int, default=MODEL_CONFIG["d_ff"])
    parser.add_argument("--decoder-layers", type=int, help="decoder layers (default: as many "
                        "as --layers; with --init teacher, the teacher's 2)")  # fmt: skip
    parser.add_argument("--init", choices=["teacher", "scratch"], default="teacher",
                        help="start from the teacher's weights (default) or random")  # fmt: skip
    parser.add_argument("--train-encoder", action="store_true",
                        help="with --init teacher: train encoder and embeddings too")  # fmt: skip
    parser.add_argument("--resume", type=Path, help="continue the run shipped in this folder")
    parser.add_argument(
        "--device",
        type=device_arg,
        default=None,
        help="cpu, cuda, cuda:1, mps (default: VT_DEVICE, else cuda when present, else cpu)",
    )
    args = parser.parse_args(argv)
    try:
        device = args.device or default_device()
    except ValueError as exc:  # VT_DEVICE names a device this machine lacks
        parser.error(str(exc))
    if args.step in ("corpus", "all"):
        print(build_corpus(args.data, args.shard, args.shards))
    settings = DistillSettings(init=args.init, freeze_encoder=not args.train_encoder)
    if settings.init == "teacher":
        settings = replace(settings, warmup=TEACHER_WARMUP)
    if args.step == "spm" or (args.step == "all" and args.init == "scratch"):
        print(train_vocab(args.data, args.vocab_size))
    if args.step in ("train", "all"):
        decoder = args.decoder_layers or (2 if args.init == "teacher" else args.layers)
        size = {"d_model": args.d_model, "n_heads": args.heads, "n_encoder_layers": args.layers,
                "n_decoder_layers": decoder, "d_ff": args.d_ff}  # fmt: skip
        meta = train_and_ship(
            args.data, args.out, {**MODEL_CONFIG, **size}, args.minutes, settings,
            args.resume, device,
        )  # fmt: skip
        print(meta["held_out"])
    if args.step in ("unscaled", "all"):
        minutes = args.minutes if args.step == "unscaled" else UNSCALED_MINUTES
        meta = record_unscaled(args.data, args.out, minutes, settings, device)
        print(meta["unscaled_run"])
    if args.step == "evaluate":
        print(evaluate(args.out, read_corpus(args.data, "held_out"), device)["held_out"])


if __name__ == "__main__":
    main()
