"""Summaries of attention arrays ``[layers, heads, q, k]``: head mean and max, attention rollout,
per-head statistics, and which tokens are special markers.

Pure numpy on the arrays a ``Trace`` holds; nothing here knows a model or Streamlit.
"""

from __future__ import annotations

import re

import numpy as np

from viz_transformer.records.trace import Patterns

SPECIAL_TOKENS = frozenset(
    {"<s>", "</s>", "<pad>", "<unk>", "<mask>", "<bos>", "<eos>"}
    | {"[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]"}
)
_BRACKETED = re.compile(r"^<\|[^|]*\|>$")  # GPT-2 / Llama 3 style, e.g. <|endoftext|>
STAT_COLUMNS = ("layer", "head", "entropy", "max_weight", "special_share", "diagonal_distance")


def is_special(token: str) -> bool:
    """Whether ``token`` is a marker the tokenizer adds (``</s>``, ``[CLS]``, ``<pad>``...)."""
    token = token.strip()
    return token in SPECIAL_TOKENS or bool(_BRACKETED.match(token))


def special_mask(tokens: tuple[str, ...] | list[str]) -> np.ndarray:
    """Boolean ``[n]``: True where ``tokens[i]`` is special."""
    return np.array([is_special(t) for t in tokens], dtype=bool)


def kept_positions(tokens: tuple[str, ...] | list[str], hide_special: bool) -> np.ndarray:
    """Indices ``[m]`` of the positions to display: all, or all but the special tokens."""
    if not hide_special:
        return np.arange(len(tokens))
    return np.flatnonzero(~special_mask(tokens))


def _whole(arr: Patterns) -> np.ndarray:
    """``arr`` as one array (a long input's lazy heads all computed, within the memory limit)."""
    if arr.ndim != 4:
        raise ValueError(
            f"expected attention shaped [layers, heads, q, k], got {arr.shape}; pass a Trace's "
            "encoder, decoder or cross array."
        )
    return np.asarray(arr)


def head_mean(arr: Patterns) -> np.ndarray:
    """Mean over the heads of each layer: ``[layers, heads, q, k]`` -> ``[layers, q, k]``.

    Rows still sum to 1, since each head's rows do (softmax, Eq. 1).
    """
    arr = _whole(arr)
    return arr.mean(axis=1)


def head_max(arr: Patterns) -> np.ndarray:
    """Maximum over the heads of each layer, ``[layers, q, k]``: where any head looks.

    Rows no longer sum to 1 (each lies between 1 and the number of heads).
    """
    arr = _whole(arr)
    return arr.max(axis=1)


def with_residual(arr: Patterns, what: str = "rollout") -> np.ndarray:
    """Each layer's head mean plus the identity (the residual connection), rows renormalised:
    ``[layers, n, n]`` float64, the per-layer matrix rollout and attention flow chain.

    Raises:
        ValueError: non-square maps (cross-attention maps decoder rows to encoder columns, so
            its layers cannot be chained on their own).
    """
    arr = _whole(arr)
    _, _, q, k = arr.shape
    if q != k:
        raise ValueError(
            f"{what} needs square self-attention maps; got {q} queries x {k} keys "
            f"(cross-attention cannot be chained through the layers on its own)."
        )
    mixed = head_mean(arr).astype(np.float64) + np.eye(q)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def rollout(arr: Patterns) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema 2020) of self-attention, ``[layers, n, n]``.

    Per layer: average the heads, add the identity for the residual connection (section 3.1:
    ``LayerNorm(x + Sublayer(x))``), renormalise the rows, then multiply through the layers:
    ``R_0 = A_0``, ``R_l = A_l @ R_{l-1}``. Row ``i`` of ``R_l`` says how much of each input token
    reaches position ``i`` after layer ``l``.

    Args:
        arr: self-attention ``[layers, heads, n, n]`` (encoder, or masked decoder).

    Returns:
        ``[layers, n, n]`` float64, rows summing to 1; element ``l`` is the rollout up to layer l.

    Raises:
        ValueError: for non-square maps (cross-attention maps decoder rows to encoder columns, so
            its layers cannot be chained on their own).
    """
    mixed = with_residual(arr)
    n_layers, q, _ = mixed.shape
    out = np.empty((n_layers, q, q))
    current = np.eye(q)
    for layer in range(n_layers):
        current = mixed[layer] @ current
        out[layer] = current
    return out


def _entropy(rows: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each row over the last axis, with 0 log 0 = 0 (masked keys)."""
    safe = np.where(rows > 0, rows, 1.0)
    return -(rows * np.log(safe)).sum(axis=-1)


def head_stats(
    arr: Patterns, key_tokens: tuple[str, ...] | list[str], self_attention: bool
) -> dict[str, np.ndarray]:
    """One row per (layer, head): how spread, how peaked, how much on markers, how far.

    Args:
        arr: ``[layers, heads, q, k]`` attention weights (rows summing to 1).
        key_tokens: the ``k`` key tokens, to find the special ones.
        self_attention: True for encoder / decoder self-attention (queries and keys are the same
            positions, so the distance to the diagonal means something); False for cross.

    Returns:
        Columns of length ``layers * heads`` (layer-major): ``layer``, ``head``; ``entropy``, the
        mean row entropy in nats; ``max_weight``, the mean of each row's largest weight;
        ``special_share``, the mean weight on special key tokens; ``diagonal_distance``, the mean
        over rows of ``sum_j a_ij |i - j|`` in positions (NaN for cross-attention).
    """
    arr = _whole(arr)
    n_layers, n_heads, q, k = arr.shape
    if len(key_tokens) != k:
        raise ValueError(
            f"{len(key_tokens)} key tokens for {k} key columns; pass the keys' tokens."
        )
    a = arr.astype(np.float64)
    if self_attention:
        offsets = np.abs(np.arange(q)[:, None] - np.arange(k)[None, :])
        distance = (a * offsets).sum(axis=-1).mean(axis=-1)
    else:
        distance = np.full((n_layers, n_heads), np.nan)
    layer, head = np.meshgrid(np.arange(n_layers), np.arange(n_heads), indexing="ij")
    columns = (
        layer,
        head,
        _entropy(a).mean(axis=-1),
        a.max(axis=-1).mean(axis=-1),
        a[..., special_mask(key_tokens)].sum(axis=-1).mean(axis=-1),
        distance,
    )
    return {name: col.reshape(-1) for name, col in zip(STAT_COLUMNS, columns, strict=True)}
