"""The paper's Transformer (section 3) with random weights, wrapped as the app wraps a shipped
paper model: tiny (d_model 16) for tests, base size by default for benchmarks."""

from __future__ import annotations

import itertools
from pathlib import Path

import torch

from viz_transformer.models.devices import default_device
from viz_transformer.models.paper import PaperModel
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.vocab import WordVocab

TINY_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
              "kappa")  # fmt: skip
# words every random model's tokenizer reads as one token each (benchmark texts are made of them)
WORDS = (
    "the", "cat", "sat", "on", "mat", "dog", "ran", "to", "red", "house", "a", "small", "bird",
    "sings", "in", "tree", "she", "reads", "book", "and", "he", "writes", "letter", "we", "walk",
    "by", "river", "every", "morning", "old", "man", "sells", "fresh", "bread", "at", "market",
    "children", "play", "near", "school", "after", "rain", "stops", "green", "hills", "stand",
    "behind", "village", "my", "friend", "found", "key", "under", "table",
)  # fmt: skip
TINY_EXAMPLE = "alpha beta gamma"
PAPER_VOCAB = 37_000  # the paper's shared English-German BPE vocabulary (section 5.1)
TINY = {"d_model": 16, "n_heads": 2, "n_encoder_layers": 2, "n_decoder_layers": 2, "d_ff": 32,
        "max_len": 16}  # fmt: skip


def fillers(n: int, exclude: set[str]) -> list[str]:
    """``n`` distinct lower-case letter strings not in ``exclude``, to pad a vocabulary to size
    (letters only: the paper vocabulary splits digits into tokens of their own)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    combos = ("".join(c) for k in itertools.count(3) for c in itertools.product(letters, repeat=k))
    return list(itertools.islice((w for w in combos if w not in exclude), n))


def _wrap(
    vocab: WordVocab,
    cfg: TransformerConfig,
    seed: int,
    device: str | torch.device,
    **spec: str,
) -> PaperModel:
    """A ``Transformer(cfg)`` initialised after ``torch.manual_seed(seed)`` on ``device``, in eval
    mode, wrapped with ``vocab`` like a shipped paper model whose ``ModelSpec`` has ``spec``'s
    name, description and example (every attention kind, sinusoidal positions)."""
    torch.manual_seed(seed)
    dev = torch.device(device)
    shows = ("encoder", "decoder", "cross")
    model_spec = ModelSpec(
        family="paper", shows=shows, positions="sinusoidal", path=Path("."), **spec
    )
    return PaperModel(model_spec, dev, Transformer(cfg).to(dev).eval(), vocab)


def tiny_paper_model(
    seed: int = 0, device: str | torch.device | None = None, **config: object
) -> PaperModel:
    """A tiny paper model (d_model 16, 2 heads, 2 + 2 layers, 16 positions, 10 words) named
    ``tiny``. Its random decoder never writes ``</s>``, so a trace decodes ``max_len - 1`` tokens:
    16 positions keep a test's trace quick (64 made the unit tier twice as long).

    Args:
        seed: the torch seed the weights are drawn with (on the CPU, so every device gets the
            same weights).
        device: where it runs; ``default_device()`` (``VT_DEVICE``) when None.
        **config: ``TransformerConfig`` fields that replace the tiny sizes (``scale_scores=False``,
            ``max_len=8``, ...).
    """
    vocab = WordVocab.build(list(TINY_WORDS))
    cfg = TransformerConfig(**{"vocab_size": len(vocab), "dropout": 0.0, **TINY, **config})
    dev = device if device is not None else default_device()
    return _wrap(vocab, cfg, seed, dev, name="tiny", description="random", example=TINY_EXAMPLE)


def paper_model(
    d_model: int = 512,
    n_heads: int = 8,
    n_layers: int = 6,
    d_ff: int = 2048,
    vocab_size: int = PAPER_VOCAB,
    max_len: int = 1024,
    device: str | torch.device = "cpu",
    seed: int = 0,
) -> PaperModel:
    """The paper's Transformer (section 3, base size by default: Table 3, row "base").

    Its word vocabulary holds ``WORDS`` padded with letter-only fillers to ``vocab_size``, so the
    embedding and output layer cost what they cost at that size; ``model.module`` is the bare
    ``Transformer`` for plain forward passes, and ``vt.trace(model, text, target=...)`` works.
    """
    words = list(dict.fromkeys(WORDS))
    vocab = WordVocab.build(words + fillers(vocab_size - 4 - len(words), set(words)))
    cfg = TransformerConfig(
        vocab_size=len(vocab),
        d_model=d_model,
        n_heads=n_heads,
        n_encoder_layers=n_layers,
        n_decoder_layers=n_layers,
        d_ff=d_ff,
        dropout=0.0,
        max_len=max_len,
    )
    return _wrap(
        vocab,
        cfg,
        seed,
        device,
        name=f"paper-random-{d_model}x{n_layers}",
        description="random paper Transformer for benchmarks",
        example="the cat sat on the mat",
    )
