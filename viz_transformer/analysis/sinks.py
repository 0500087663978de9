"""Attention sinks (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks"):
how much of each head's attention parks on the first token, and a head's map with that first key
column hidden and every row renormalised so the rest of the map is readable.

Pure numpy on the ``[layers, heads, q, k]`` arrays a ``Trace`` holds (a long input's lazy
patterns are read one head at a time, and only the cells used leave the device); nothing here
knows a model or Streamlit.
"""

from __future__ import annotations

import numpy as np

from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import drawn
from viz_transformer.records.trace import Patterns

RENORMALISED = "first token hidden, rows renormalised to sum to 1"


def first_query(kind: AttentionKind, n_queries: int) -> int:
    """The first query row the sink mass averages: 1 for masked decoder self-attention (row 0
    sees only the first token, so its weight there is 1 by construction), else 0."""
    return 1 if kind == "decoder" and n_queries > 1 else 0


def sink_mass(arr: Patterns, kind: AttentionKind) -> np.ndarray:
    """Per head, the mean weight the queries give the first key (the first token).

    Args:
        arr: ``[layers, heads, q, k]`` weights of one attention kind (a lazy view is read one
            head at a time, so a long input is never whole).
        kind: ``"encoder"``, ``"decoder"`` (its first query row is skipped: see
            ``first_query``) or ``"cross"`` (the first source token).

    Returns:
        float32 ``[layers, heads]``, each in [0, 1]: 1 is a head that looks only at the first
        token, ``1 / k`` about what a uniform head gives it.

    Raises:
        ValueError: an array that is not ``[layers, heads, q, k]``.
    """
    if arr.ndim != 4:
        raise ValueError(
            f"expected attention shaped [layers, heads, q, k], got {arr.shape}; pass a Trace's "
            "encoder, decoder or cross array."
        )
    n_layers, n_heads, n_q, _ = arr.shape
    start = first_query(kind, n_q)
    mass = np.empty((n_layers, n_heads), dtype=np.float32)
    rows, first = np.arange(start, n_q), np.zeros(1, dtype=np.int64)  # a lazy head sends only these
    for layer in range(n_layers):
        for head in range(n_heads):
            mass[layer, head] = drawn(arr, layer, head, rows, first)[0].mean()
    return mass


def hide_first_key(z: np.ndarray) -> np.ndarray:
    """One head's map ``[q, k]`` without its first key column, each row renormalised to sum to 1.

    Cells that were 0 (the causal mask's upper triangle) stay exactly 0. A row with nothing left
    (a decoder's first query, which sees only the first token) becomes NaN: no weights to show.

    Returns:
        float32 ``[q, k - 1]``.
    """
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"expected one head's map [q, k] with k >= 2 keys, got {z.shape}.")
    rest = np.asarray(z, dtype=np.float64)[:, 1:]
    total = rest.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, rest / total, np.nan)
    return out.astype(np.float32)


def top_sinks(mass: np.ndarray, n: int = 3) -> list[tuple[int, int, float]]:
    """The ``n`` heads with the most mass on the first token, as (layer, head, mass), largest
    first."""
    flat = np.argsort(mass, axis=None)[::-1][:n]
    return [(int(i // mass.shape[1]), int(i % mass.shape[1]), float(mass.flat[i])) for i in flat]
