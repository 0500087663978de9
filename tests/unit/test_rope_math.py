"""Rotary positions (``analysis.rope``) on Llama's tables built from their formula (no model):
the rotation is transformers' ``apply_rotary_pos_emb``, and each score and angle equals the
complex-number form of RoPE, ``Re(sum_i q_i conj(k_i) e^{i (m - n) theta_i})``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from viz_transformer.analysis import rope

D, P = 8, 24  # head width, positions
THETA = 10000.0 ** (-np.arange(0, D, 2) / D)  # (D/2,) Llama's inverse frequencies


def tables() -> tuple[np.ndarray, np.ndarray]:
    """Llama's cos and sin ``[P, D]``: each frequency twice (dims i and i + D/2)."""
    angles = np.arange(P)[:, None] * np.concatenate([THETA, THETA])[None]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def complex_score(q: np.ndarray, k: np.ndarray, offset: int) -> float:
    """R_m q . R_n k for m - n = offset: pair i is the complex number (x_i + j x_{i + D/2})."""
    h = D // 2
    qc, kc = q[:h] + 1j * q[h:], k[:h] + 1j * k[h:]
    return float(np.real(np.sum(qc * np.conj(kc) * np.exp(1j * offset * THETA))))


def test_rotation_is_transformers() -> None:
    cos, sin = tables()
    x = np.random.default_rng(0).normal(size=(1, 2, P, D)).astype(np.float32)
    x_t, cos_t, sin_t = (torch.from_numpy(a).to("cpu") for a in (x, cos, sin))  # host reference
    want, _ = apply_rotary_pos_emb(x_t, x_t, cos_t[None], sin_t[None])
    np.testing.assert_allclose(rope.rotate(x, cos, sin), want.numpy(), atol=1e-6)


def test_scores_and_offsets_are_the_complex_form() -> None:
    cos, sin = tables()
    q, k = rope.fixed_pair(D, seed=1)
    table = rope.scores(q, k, cos, sin)
    for m, n in [(0, 0), (5, 2), (2, 5), (23, 0), (7, 19)]:
        assert table[m, n] == pytest.approx(complex_score(q, k, m - n), abs=1e-5)
    rows = rope.score_by_offset(table, [0, 3])  # S[n0 + o, n0]: the query o positions later
    assert rows.shape == (2, P - 3)
    want = [complex_score(q, k, o) for o in range(P - 3)]
    np.testing.assert_allclose(rows, np.stack([want, want]), atol=1e-5)
    assert rope.shift_error(table, 4) < 1e-6


def test_pair_angles_are_position_times_frequency() -> None:
    cos, sin = tables()
    got = rope.pair_angles(cos, sin)
    want = np.angle(np.exp(1j * np.arange(P)[:, None] * THETA[None]))  # wrapped to (-pi, pi]
    np.testing.assert_allclose(got, want, atol=1e-5)
