"""The notebook benchmark's traces at 512 tokens, 6 layers x 8 heads: the paper Transformer with
random weights (``random_trace``), lazy patterns with a few strong weights per row
(``peaked_trace``) and every row spread over 50 keys, the head view's most lines (``worst_trace``).
A kernel cell of ``bench/bench_notebook.py`` imports them."""

from __future__ import annotations

import numpy as np

import viz_transformer as vt
from bench.harness.models import paper_model, text_of
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Trace

TOKENS, LAYERS, HEADS = 512, 6, 8
LINES_PER_ROW = 50  # weights of 0.02 each: the most lines a row can draw (HEAD_VIEW_MIN)


def random_trace() -> Trace:
    """The paper Transformer with random weights at 512 tokens, the text forced as target."""
    model = paper_model(d_model=256, n_heads=HEADS, n_layers=LAYERS, d_ff=1024, max_len=1024)
    text = text_of(lambda t: len(model.vocab.encode(t)), TOKENS)
    return vt.trace(model, text, target=text)


def peaked_trace(seed: int = 0) -> Trace:
    """Lazy patterns from wide random queries and keys: a few strong weights per row."""
    gen = np.random.default_rng(seed)
    qk = [[gen.normal(0, 1.2, (HEADS, TOKENS, 32)).astype(np.float32) for _ in range(LAYERS)]
          for _ in range(2)]  # fmt: skip
    words = tuple(f"w{i}" for i in range(TOKENS))
    return Trace("peaked", words, (), (), LazyPatterns(*qk, causal=False, device="cpu"), None, None)


def worst_trace() -> Trace:
    """Every row of every head spread evenly over 50 keys: the head view's most lines."""
    at = np.arange(TOKENS)
    weights = np.zeros((LAYERS, HEADS, TOKENS, TOKENS), np.float32)
    for shift in range(LINES_PER_ROW):
        weights[:, :, at, (at + shift * 7) % TOKENS] = 1 / LINES_PER_ROW
    words = tuple(f"w{i}" for i in range(TOKENS))
    return Trace("worst", words, (), (), weights, None, None).validate()
