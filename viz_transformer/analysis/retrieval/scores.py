"""Copy-paste retrieval and sink scores of every head from its attention rows at the output steps
(Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context Factuality", section 2).

Pure numpy on what ``records.lazy.drawn`` returns: the rows of the positions that predicted the
output tokens (the row of output step ``i`` is the row of the position before it: the last prompt
position for the first output token), over every key. A long input's lazy patterns give only
those rows; nothing here makes a ``[layers, heads, T, T]`` array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from viz_transformer.records.lazy import drawn
from viz_transformer.records.trace import Patterns


def step_rows(start: int, n_out: int) -> np.ndarray:
    """Query rows of output steps ``0..n_out - 1`` when the output's first token stands at
    position ``start``: the row of step ``i`` is ``start - 1 + i``."""
    if start < 1:
        raise ValueError("the output needs at least one token before it to be predicted from.")
    return np.arange(start - 1, start - 1 + n_out, dtype=np.int64)


def row_argmax_and_sink(
    arr: Patterns,
    rows: np.ndarray,
    on_layer: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per head, the argmax key of each row and the mean weight on key 0 over the rows.

    Args:
        arr: ``[layers, heads, T, T]`` decoder self-attention (numpy, or lazy: each head
            computes only ``rows``).
        rows: query positions, one per output step.
        on_layer: called with each layer done (a progress and Stop point).

    Returns:
        ``argmax`` int64 ``[layers, heads, len(rows)]`` (ties: the first key) and ``sink``
        float32 ``[layers, heads]``.
    """
    n_layers, n_heads, _, n_keys = arr.shape
    keys = np.arange(n_keys)
    argmax = np.zeros((n_layers, n_heads, len(rows)), dtype=np.int64)
    sink = np.zeros((n_layers, n_heads), dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            w = drawn(arr, layer, head, rows, keys)[0]  # (len(rows), T)
            argmax[layer, head] = w.argmax(-1)
            sink[layer, head] = w[:, 0].mean() if len(rows) else 0.0
        if on_layer is not None:
            on_layer(layer)
    return argmax, sink


def copy_hits(
    argmax: np.ndarray,
    generated: Sequence[int],
    ids: Sequence[int],
    answer: Sequence[int],
) -> np.ndarray:
    """Which answer position each head copied at each output step.

    At a step whose generated token ``w`` equals the token at some answer position, a head
    copies when its row's argmax lies at an answer position holding ``w``.

    Args:
        argmax: ``[layers, heads, steps]`` argmax keys (``row_argmax_and_sink``).
        generated: the token id of each output step.
        ids: the token ids of the whole sequence (positions index into it).
        answer: the positions the output should copy from.

    Returns:
        int64 ``[layers, heads, steps]``: the answer position copied, or -1.
    """
    answer_set = set(int(p) for p in answer)
    at_answer = np.isin(argmax, list(answer_set)) if answer_set else np.zeros(argmax.shape, bool)
    token_at = np.asarray(ids, dtype=np.int64)[argmax]  # the token each argmax lies on
    same = token_at == np.asarray(generated, dtype=np.int64)[None, None, :]
    return np.where(at_answer & same, argmax, -1)


def retrieval_scores(hits: np.ndarray, n_answer: int) -> np.ndarray:
    """Per head, the distinct answer positions copied over the number of answer positions.

    Returns:
        float32 ``[layers, heads]`` in 0..1 (0 for every head when there is no answer position).
    """
    out = np.zeros(hits.shape[:2], dtype=np.float32)
    if n_answer == 0:
        return out
    for layer, head in np.ndindex(*hits.shape[:2]):
        copied = hits[layer, head]
        out[layer, head] = len(set(copied[copied >= 0].tolist())) / n_answer
    return out


def first_copy(hits: np.ndarray, layer: int, head: int) -> int | None:
    """The first output step at which the head copied, or None."""
    steps = np.flatnonzero(hits[layer, head] >= 0)
    return int(steps[0]) if len(steps) else None
