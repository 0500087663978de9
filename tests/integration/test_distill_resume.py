"""``distill train --resume`` on a rebuilt corpus (issue 18): the resumed run keeps the vocabulary
its embeddings were trained with, and the bar an epoch must beat is the resumed model's score on
the new dev set, not the score recorded on the old one. A tiny model on a tiny corpus, offline."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from viz_transformer.testing.distill import TINY_SETTINGS, TINY_STUDENT, write_tiny_corpus
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.training.en_pt.distill import load_shipped, train_and_ship
from viz_transformer.training.en_pt.distill_unscaled import record_unscaled

TINY, SETTINGS = TINY_STUDENT, TINY_SETTINGS


def _corpus(folder: Path, adjectives: list[str], vocab_size: int) -> None:
    assert write_tiny_corpus(folder, adjectives, vocab_size) == folder / MODEL_FILE


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny run trained and shipped on a first corpus."""
    root = tmp_path_factory.mktemp("distill")
    _corpus(root / "first", ["big", "small", "red"], 40)
    out = root / "shipped"
    train_and_ship(root / "first", out, TINY, 1.0, SETTINGS, device=torch.device("cpu"))
    return out


def test_resume_on_a_rebuilt_corpus_keeps_the_shipped_vocabulary(shipped: Path, tmp_path: Path):
    before = SentencePieceVocab.load(shipped / MODEL_FILE)
    rebuilt = tmp_path / "rebuilt"
    _corpus(rebuilt, ["big", "small", "red", "old", "new", "blue"], 48)  # another vocabulary
    assert SentencePieceVocab.load(rebuilt / MODEL_FILE).pieces != before.pieces
    out = tmp_path / "resumed"
    shutil.copytree(shipped, out)
    wider = {**TINY, "d_model": 64}  # ignored: a resumed run keeps its shipped size
    meta = train_and_ship(rebuilt, out, wider, 1.0, SETTINGS, out, torch.device("cpu"))
    model, vocab, _ = load_shipped(out)
    assert model.cfg.d_model == TINY["d_model"]
    assert vocab.pieces == before.pieces
    assert model.cfg.vocab_size == len(before)  # the embeddings still fit the vocabulary
    assert meta["held_out"]["n"] == 12  # every fifth of the 60 rebuilt pairs, scored
    log = (rebuilt / "train.log").read_text()
    recorded = json.loads((shipped / "meta.json").read_text())["dev"]
    # the bar is the resumed model's dev score on the rebuilt corpus, said next to the old one
    assert f"(recorded {recorded})" in log and "resuming" in log


def test_resume_keeps_the_recorded_run_without_the_scale(shipped: Path, tmp_path: Path):
    """The softmax page's second run (``distill unscaled``) survives a resumed, longer run."""
    first, out = shipped.parent / "first", tmp_path / "resumed"
    shutil.copytree(shipped, out)
    record_unscaled(first, out, 1.0, SETTINGS, torch.device("cpu"))
    recorded = json.loads((out / "meta.json").read_text())
    longer = replace(SETTINGS, steps=SETTINGS.steps + 12)  # 12 updates past the shipped 3
    train_and_ship(first, out, TINY, 1.0, longer, out, torch.device("cpu"))
    meta = json.loads((out / "meta.json").read_text())
    assert meta["steps"] > recorded["steps"]  # the resumed run saved its longer curve
    assert meta["curves"]["unscaled"] == recorded["curves"]["unscaled"]
    assert (meta["curves_note"], meta["unscaled_run"]) == (
        recorded["curves_note"],
        recorded["unscaled_run"],
    )
    # what trained the first steps stays said beside what trained the rest
    assert meta["train"]["resumed_after_steps"] == recorded["steps"]
    assert meta["train"]["before"] == recorded["train"]
    assert meta["train"]["steps"] == longer.steps
