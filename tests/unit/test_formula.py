"""The tiles evaluate a call's whole formula (``records.formula``): soft-cap, a mask predicate
(window), an additive bias (its diagonals, or dense) and sinks, against a dense float64
reference, in one pass and in two passes over the keys; a row's weight on the sink is what it
lacks of 1."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

from viz_transformer.records.formula import Bias, Formula, Mask
from viz_transformer.records.lazy import LazyPatterns

N, D, HEADS = 23, 8, 3
WINDOW = 5
TILES = {"one pass": (7, 10_000), "two passes": (5, 6)}


def _window(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    """Causal with a window of ``WINDOW`` keys, as transformers' predicate gives it."""
    return (kv <= q) & (kv > q - WINDOW)


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(HEADS, N, D)) * 2
    k = rng.normal(size=(HEADS, N, D)) * 2
    diagonals = rng.normal(size=(HEADS, 2 * N - 1)) * 3  # a relative bias: f_h(j - i)
    sinks = rng.normal(size=(HEADS, 1)) + 2.0
    return q, k, diagonals, sinks


def _reference(q, k, scale, softcap, bias, allowed, sinks) -> tuple[np.ndarray, np.ndarray]:
    """Dense float64: weights ``[heads, n, n]`` and each row's weight on the sink."""
    s = np.einsum("hqd,hkd->hqk", q, k) * scale
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    s = s + bias
    s = np.where(allowed, s, -np.inf)
    logits = np.concatenate([s, np.broadcast_to(sinks[:, :, None], (HEADS, N, 1))], axis=-1)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    return p[..., :-1], p[..., -1]


def _dense_bias(diagonals: np.ndarray) -> np.ndarray:
    i, j = np.arange(N)[:, None], np.arange(N)[None, :]
    return diagonals[:, j - i + N - 1]


@pytest.mark.parametrize("tile", list(TILES.values()), ids=list(TILES))
@pytest.mark.parametrize("bias_kept", ["diagonals", "dense"])
def test_softcap_window_bias_and_sinks_equal_a_dense_reference(tile, bias_kept):
    q, k, diagonals, sinks = _inputs()
    scale, softcap = D**-0.5, 1.7
    dense = _dense_bias(diagonals)
    if bias_kept == "dense":
        dense[:, 3, 4] += 0.5  # no longer Toeplitz: kept as the model made it
    bias = Bias.of(torch.tensor(dense, dtype=torch.float32, device="cpu"))
    assert (bias.diagonals is None) == (bias_kept == "dense")
    mask = Mask(_window, n_q=N)
    f = Formula(
        scale, softcap, mask, bias, torch.tensor(sinks, dtype=torch.float32, device="cpu"), (N, N)
    )
    lazy = LazyPatterns([q.astype(np.float32)], [k.astype(np.float32)], True, formulas=[f])
    lazy.tile = tile
    i, j = np.arange(N)[:, None], np.arange(N)[None, :]
    allowed = (j <= i) & (j > i - WINDOW)
    want, sink_want = _reference(q, k, scale, softcap, dense, allowed, sinks)
    got = np.asarray(lazy)[0]
    np.testing.assert_allclose(got, want, atol=2e-6)
    assert np.all(got[:, ~allowed] == 0.0)  # outside the window: exactly 0
    for h in range(HEADS):
        sink = lazy.sink_weights(0, h)
        np.testing.assert_allclose(sink, sink_want[h], atol=2e-6)
        np.testing.assert_allclose(got[h].sum(-1) + sink, 1.0, atol=2e-6)
    assert lazy.has_sinks(0)
    rows = np.array([0, 9, N - 1])  # a window of rows computes the same cells
    np.testing.assert_allclose(lazy.cells(0, 1, rows), want[1][rows], atol=2e-6)


def test_a_toeplitz_bias_is_kept_as_its_diagonals_exactly():
    _, _, diagonals, _ = _inputs(1)
    bias = Bias.of(torch.tensor(_dense_bias(diagonals), dtype=torch.float32, device="cpu"))
    assert bias.dense is None and bias.diagonals.shape == (HEADS, 2 * N - 1)
    s = torch.zeros(N, N, device="cpu")
    bias.add_(s, 2, torch.arange(N, device="cpu"), None, N)
    np.testing.assert_allclose(s.numpy(), _dense_bias(diagonals)[2], atol=1e-6)
    cols = torch.tensor([0, 5, N - 1], device="cpu")
    part = torch.zeros(N, 3, device="cpu")
    bias.add_(part, 1, torch.arange(N, device="cpu"), cols, N)
    np.testing.assert_allclose(part.numpy(), _dense_bias(diagonals)[1][:, [0, 5, N - 1]], atol=1e-6)


def test_a_formula_with_a_predicate_pickles_as_a_dense_mask():
    q, k, _, _ = _inputs(2)
    f = Formula(D**-0.5, None, Mask(_window, n_q=N), cells=(N, N))
    lazy = LazyPatterns([q.astype(np.float32)], [k.astype(np.float32)], True, formulas=[f])
    copy = pickle.loads(pickle.dumps(lazy))  # the closure is not picklable; its cells are
    assert copy.formula(0).mask.predicate is None
    np.testing.assert_allclose(np.asarray(copy), np.asarray(lazy), atol=1e-7)


def test_a_row_that_sees_no_key_gives_all_its_weight_to_the_sink():
    q, k, _, sinks = _inputs(3)
    nothing = Mask(lambda b, h, qi, kv: kv > qi + N, n_q=N)  # every key hidden
    f = Formula(
        1.0, None, nothing, None, torch.tensor(sinks, dtype=torch.float32, device="cpu"), (N, N)
    )
    lazy = LazyPatterns([q.astype(np.float32)], [k.astype(np.float32)], False, formulas=[f])
    assert np.all(lazy.cells(0, 0) == 0.0)
    np.testing.assert_allclose(lazy.sink_weights(0, 0), 1.0)
    assert math.isclose(float(lazy.sink_weights(0, 1)[0]), 1.0)
