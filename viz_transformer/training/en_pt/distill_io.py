"""A trained ``paper-en-pt`` run on disk: save and load it, translate greedily, and score it
against the teacher (chrF) on the held-out split."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import greedy_batch
from viz_transformer.settings import WEIGHTS_DIR
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.training.checkpoints import weights_state
from viz_transformer.training.en_pt.distill_loop import DistillSettings

OUT_DIR = WEIGHTS_DIR / "paper-en-pt"
SAMPLE_SIZE = 200  # held-out pairs shipped for the test of the recorded score


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
        max_new = min(model.cfg.max_len - 1, 2 * max(map(len, seqs)) + 10)
        ids = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}
        outs = greedy_batch(model, seqs, max_new, **ids)
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
    save_file(weights_state(model, torch.float16), str(out_dir / "model.safetensors"))
    if vocab.path.resolve() != (out_dir / MODEL_FILE).resolve():
        shutil.copyfile(vocab.path, out_dir / MODEL_FILE)
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False))


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
