"""Rotary positions (RoPE, Su et al. 2021) read from a model's own cos/sin tables: the angle each
(q, k) pair of dimensions turns by at each position, and the score of a fixed q, k pair as a
function of the offset m - n, which is why nothing needs to be added to the token embedding."""

from __future__ import annotations

import numpy as np


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """``x`` rotated pair by pair (dim i with dim i + d/2, Llama's half-split layout):
    ``x * cos + rotate_half(x) * sin``, as ``apply_rotary_pos_emb`` does.

    Args:
        x: ``(..., P, d)`` or ``(d,)`` broadcast against ``cos``, ``sin`` ``[P, d]``.
    """
    half = x.shape[-1] // 2
    turned = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + turned * sin


def pair_angles(cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The angle (radians, in [-π, π]) pair i is turned by at each position, ``[P, d/2]``."""
    half = cos.shape[-1] // 2
    return np.arctan2(sin[:, :half], cos[:, :half])


def scores(q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """``S[m, n] = R_m q · R_n k`` for every pair of positions, ``[P, P]`` (float64)."""
    rq = rotate(q.astype(np.float64), cos, sin)  # (P, d): q placed at each position m
    rk = rotate(k.astype(np.float64), cos, sin)  # (P, d): k placed at each position n
    return rq @ rk.T


def score_by_offset(table: np.ndarray, starts: list[int]) -> np.ndarray:
    """Rows ``S[n0 + o, n0]`` for offsets o = 0..(P - 1 - max(starts)), one row per key position
    ``n0`` in ``starts``: if only the offset matters the rows coincide, ``[len(starts), O]``."""
    length = table.shape[0] - max(starts)
    return np.stack([table[np.arange(length) + n0, n0] for n0 in starts])


def shift_error(table: np.ndarray, shift: int) -> float:
    """Largest ``|S[m + shift, n + shift] - S[m, n]|`` relative to ``max |S|``: zero up to
    float rounding when the score depends only on m - n."""
    n = table.shape[0] - shift
    moved = table[shift:, shift:] - table[:n, :n]
    return float(np.abs(moved).max() / max(np.abs(table).max(), 1e-30))


def fixed_pair(d_head: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fixed query and key, ``(d_head,)`` each, drawn from a seeded normal distribution."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d_head), rng.standard_normal(d_head)
