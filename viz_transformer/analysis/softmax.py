"""Softmax saturation (section 3.2.1, footnote 4): why the scores are divided by sqrt(d_k).

Synthetic part: q, k ~ N(0, 1) of width d_k give q.k with variance d_k, and the unscaled softmax
saturates (one weight near 1, a vanishing Jacobian). Real part: any captured pattern can be shown
without the scale, because softmax ignores a constant per row (see ``rescale``).
"""

from __future__ import annotations

import math

import numpy as np

from viz_transformer.models.results import HeadScale

SATURATED = 0.99  # a row whose largest weight exceeds this is "saturated"
_CHUNK = 2**22  # numbers drawn at once, so a large sample never holds gigabytes


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax; ``-inf`` scores (masked keys) get weight exactly 0."""
    s = np.asarray(scores, dtype=np.float64)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    return e / e.sum(axis=axis, keepdims=True)


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats, with 0 log 0 = 0 (masked keys add nothing); log n for uniform."""
    p = np.asarray(p, dtype=np.float64)
    logs = np.log(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=axis)


def jacobian(p: np.ndarray) -> np.ndarray:
    """The softmax Jacobian d p / d s = diag(p) - p p^T.

    Args:
        p: weights ``[..., n]``.

    Returns:
        ``[..., n, n]``; entry (i, j) is d p_i / d s_j.
    """
    p = np.asarray(p, dtype=np.float64)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def jacobian_norm(p: np.ndarray) -> np.ndarray:
    """Frobenius norm of ``jacobian(p)`` without building it: sum p^2 - 2 sum p^3 + (sum p^2)^2.

    Near 0 when one weight is near 1: the gradient that reaches the scores vanishes.
    """
    p = np.asarray(p, dtype=np.float64)
    s2, s3 = (p**2).sum(-1), (p**3).sum(-1)
    return np.sqrt(np.maximum(s2 - 2.0 * s3 + s2**2, 0.0))


def dot_products(d_k: int, n_samples: int, seed: int = 0) -> np.ndarray:
    """``n_samples`` values of q.k with q, k ~ N(0, I_{d_k}) independent (footnote 4).

    Returns:
        float64 ``[n_samples]``: mean 0, variance d_k (divide by sqrt(d_k) for variance 1).
    """
    if d_k < 1 or n_samples < 1:
        raise ValueError(f"d_k={d_k} and n_samples={n_samples} must both be at least 1.")
    rng = np.random.default_rng([seed, d_k])
    rows = max(1, _CHUNK // d_k)
    out = [
        np.einsum("nd,nd->n", *rng.standard_normal((2, min(rows, n_samples - i), d_k)))
        for i in range(0, n_samples, rows)
    ]
    return np.concatenate(out)


def score_rows(n_keys: int, d_k: int, n_rows: int = 1, seed: int = 0) -> np.ndarray:
    """Unscaled scores q.k_j of ``n_rows`` queries against ``n_keys`` keys, all ~ N(0, I_{d_k}).

    Returns:
        float64 ``[n_rows, n_keys]``.
    """
    if min(n_keys, d_k, n_rows) < 1:
        raise ValueError(f"n_keys={n_keys}, d_k={d_k}, n_rows={n_rows} must all be at least 1.")
    rng = np.random.default_rng([seed, d_k, n_keys])
    q = rng.standard_normal((n_rows, 1, d_k))
    k = rng.standard_normal((n_rows, n_keys, d_k))
    return (q * k).sum(-1)


def saturation_curves(
    n_keys: int, d_ks: np.ndarray, n_rows: int = 256, seed: int = 0
) -> dict[str, np.ndarray]:
    """Mean entropy, max weight and Jacobian norm of softmax over ``n_keys`` random scores.

    Args:
        n_keys: keys per query (the sequence length n).
        d_ks: the widths to try, e.g. ``np.unique(np.geomspace(1, 1024, 21).round())``.
        n_rows: seeded query rows averaged per width.

    Returns:
        ``"d_k"`` and, for ``scaled`` (softmax(q.k / sqrt(d_k))) and ``unscaled``
        (softmax(q.k)), ``"entropy_*"``, ``"max_weight_*"``, ``"jacobian_norm_*"``: each ``[len]``.
    """
    d_ks = np.asarray(d_ks, dtype=np.int64)
    out: dict[str, list[float]] = {}
    for d_k in d_ks:
        s = score_rows(n_keys, int(d_k), n_rows, seed)
        for mode, scores in (("scaled", s / math.sqrt(d_k)), ("unscaled", s)):
            p = softmax(scores)
            for stat, value in (
                ("entropy", entropy(p)),
                ("max_weight", p.max(-1)),
                ("jacobian_norm", jacobian_norm(p)),
            ):
                out.setdefault(f"{stat}_{mode}", []).append(float(value.mean()))
    return {"d_k": d_ks, **{k: np.array(v) for k, v in out.items()}}


def rescale(p: np.ndarray, factor: float) -> np.ndarray:
    """The pattern the same scores give when multiplied by ``factor``: p**factor, renormalised.

    Softmax ignores a constant per row, so the scores are log p + c; ``factor * (log p + c)``
    gives p**factor / sum p**factor. Removing 1/sqrt(d_k) is ``factor = sqrt(d_k)``; a
    temperature T is ``factor = 1 / T``. Masked (zero) weights stay exactly zero. Computed in
    log space so a row never underflows to all zeros.

    Args:
        p: attention weights ``[..., q, k]`` (rows sum to 1).
        factor: positive multiplier of the scores.

    Returns:
        float32 array shaped like ``p``, rows summing to 1.
    """
    if not factor > 0:
        raise ValueError(f"factor={factor} must be positive.")
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logs = np.log(p)
    return softmax(factor * logs).astype(np.float32)


def pattern_stats(p: np.ndarray) -> dict[str, float]:
    """Mean row entropy (nats), mean max weight, and the share of saturated rows (max > 0.99)."""
    top = np.asarray(p).max(-1)
    return {
        "entropy": float(entropy(p).mean()),
        "max_weight": float(top.mean()),
        "saturated": float((top > SATURATED).mean()),
    }


def with_and_without_scale(p: np.ndarray, scale: HeadScale) -> tuple[np.ndarray, np.ndarray]:
    """(pattern with 1/sqrt(d_k), pattern without), whichever of the two the model computed.

    Args:
        p: a captured pattern ``[..., q, k]``.
        scale: ``model.head_scale()``; an unscaled model's pattern is the "without" one.

    Returns:
        Two float32 arrays shaped like ``p``.
    """
    root = math.sqrt(scale.d_k)
    p = np.asarray(p, dtype=np.float32)
    if scale.scaled:
        return p, rescale(p, root)
    return rescale(p, 1.0 / root), p
