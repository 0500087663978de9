"""Shared fixtures: one torch thread (2 shared cores), tiny random paper models built offline."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch

from viz_transformer.models.base import ModelSpec
from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.vocab import WordVocab

torch.set_num_threads(1)

TINY_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def make_tiny(seed: int = 0, **overrides: object) -> PaperModel:
    """A randomly initialised paper model (d_model 16, 2 heads) wrapped like a shipped one."""
    vocab = WordVocab.build(TINY_WORDS)
    fields = {"vocab_size": len(vocab), "d_model": 16, "n_heads": 2, "n_encoder_layers": 2,
              "n_decoder_layers": 2, "d_ff": 32, "dropout": 0.0, "max_len": 64}  # fmt: skip
    cfg = TransformerConfig(**{**fields, **overrides})
    torch.manual_seed(seed)
    module = Transformer(cfg).eval()
    spec = ModelSpec(
        name="tiny", family="paper", description="random", example="alpha beta gamma",
        shows=("encoder", "decoder", "cross"), positions="sinusoidal", path=Path("."),
    )  # fmt: skip
    return PaperModel(spec, torch.device("cpu"), module, vocab)


@pytest.fixture
def tiny() -> PaperModel:
    return make_tiny()
