"""Synthetic attention for the drawing benchmarks and their tests: ``[6, 12, n, n]`` softmax
rows with one pattern per head (``attention``) and BERT-style tokens (``tokens``)."""

from __future__ import annotations

import numpy as np

LAYERS, HEADS = 6, 12
WORDS = ("the", "cat", "sat", "on", "mat", "while", "a", "dog", "ran", "to", "red", "house")


def attention(n: int, seed: int = 0) -> np.ndarray:
    """``[6, 12, n, n]`` float32 rows summing to 1: random scores plus one pattern per head.

    Patterns cycle over the heads: attend to oneself, to the previous token, to the first
    token ([CLS]), or nothing but noise; their strength varies by layer.
    """
    rng = np.random.default_rng(seed)
    eye = np.eye(n, dtype=np.float32)
    patterns = [eye, np.eye(n, k=-1, dtype=np.float32), np.zeros((n, n), np.float32), None]
    patterns[2][:, 0] = 1.0
    out = np.empty((LAYERS, HEADS, n, n), np.float32)
    for layer in range(LAYERS):
        for head in range(HEADS):
            scores = rng.standard_normal((n, n), dtype=np.float32)
            pattern = patterns[head % len(patterns)]
            if pattern is not None:
                scores += (2.0 + layer) * pattern
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            out[layer, head] = weights / weights.sum(axis=-1, keepdims=True)
    return out


def tokens(n: int) -> list[str]:
    """``[CLS]``, words, ``[SEP]``: ``n`` tokens (repeated words, as in a long text)."""
    return ["[CLS]", *(WORDS[i % len(WORDS)] for i in range(n - 2)), "[SEP]"]
