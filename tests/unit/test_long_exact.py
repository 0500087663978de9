"""131,072 tokens, exact (issues 46, 53): a causal head of bfloat16 queries and keys (Llama 3's
head size 128, its 1/sqrt(d_k) applied in float32 on each tile) computed by ``LazyPatterns`` from
each row's log-sum-exp (``tiles.log_sum_exp``, one streaming pass over key tiles) or in one pass
when whole rows fit, equals the float64 softmax of the same queries and keys on sampled rows:
every weight above 1e-4 within a relative 2e-5, every other within 1e-7. An absolute 1e-5 alone
would pass almost anything at this length (the median weight of a row at 131,072 tokens is about
4e-6): a log-sum-exp off by 1e-4, which moves every weight of its row by 1e-4 of itself, is
caught (``test_a_log_sum_exp_off_by_1e_4_is_caught``). The same code path as on a GPU, on the
CPU (``VT_DEVICE`` when set)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from viz_transformer.models.devices import default_device
from viz_transformer.records import tiles
from viz_transformer.records.lazy import LazyPatterns

DEVICE = default_device()
D_K = 128
FLOOR, RTOL, ATOL = 1e-4, 2e-5, 1e-7  # weights above FLOOR: relative; the others: absolute


def _qk(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    # peaked rows, as trained; drawn on the CPU (the generator's), then moved
    q = (torch.randn(1, n, D_K, generator=gen, device="cpu") * 1.5).bfloat16()
    k = torch.randn(1, n, D_K, generator=gen, device="cpu").bfloat16()
    return q.to(DEVICE), k.to(DEVICE)


def _exact(q: torch.Tensor, k: torch.Tensor, rows: np.ndarray) -> np.ndarray:
    """The weights of ``rows`` in float64 (scores, causal mask, softmax) of the same bfloat16
    queries and keys: the reference, not another float32 computation."""
    at = torch.from_numpy(rows).to(q.device)
    s = (q[at].double() @ k.double().T) * D_K**-0.5
    s.masked_fill_(torch.arange(k.shape[0], device=q.device)[None] > at[:, None], -math.inf)
    return torch.softmax(s, -1).cpu().numpy()


def _check(got: np.ndarray, ref: np.ndarray) -> None:
    """Relative on the weights that carry a row (above ``FLOOR``), absolute on the rest."""
    big = ref > FLOOR
    assert big.sum() >= len(ref)  # each row has some: the relative check is never empty
    np.testing.assert_allclose(got[big], ref[big], rtol=RTOL, atol=0)
    np.testing.assert_allclose(got[~big], ref[~big], rtol=0, atol=ATOL)


def _rows(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.unique(np.r_[0, 1, n - 1, rng.integers(0, n, 13)])


@pytest.mark.parametrize("tile", [None, (16, 8192)], ids=["one pass", "log-sum-exp"])
@pytest.mark.parametrize("n", [8192, 131_072])
def test_sampled_rows_of_a_long_head_equal_float32_eager_attention(n, tile):
    q, k = _qk(n, seed=n)
    lazy = LazyPatterns([q], [k], causal=True, scale=D_K**-0.5)
    lazy.tile = tile
    rows = _rows(n)
    got = lazy.cells(0, 0, rows)
    _check(got, _exact(q[0], k[0], rows))
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)
    assert not np.triu(got[:, :n], 1)[:, rows.max() + 1 :].any()  # nothing after any row


def test_the_log_sum_exp_of_each_row_is_exact_to_1e_5():
    """Each row's ``log sum_j exp(s_j)`` over key tiles equals float64's ``logsumexp``; one off
    by ln 2 = 0.693 (or in base 2) would halve or double every weight of the row."""
    n = 4096
    q, k = _qk(n, seed=1)
    head = tiles.HeadQK(q[0], k[0], causal=True, scale=D_K**-0.5)
    rows = torch.arange(0, n, 97, device=q.device)
    got = tiles.log_sum_exp(head, rows, step=512).cpu().double()
    s = (q[0, rows].double() @ k[0].double().T) * D_K**-0.5
    s.masked_fill_(torch.arange(n, device=q.device)[None] > rows[:, None], -math.inf)
    ref = torch.logsumexp(s, -1).cpu()
    np.testing.assert_allclose(got.numpy(), ref.numpy(), atol=1e-5, rtol=0)
    assert (got - ref).abs().max() < math.log(2) / 1e4  # ln 2 off is 7,000 times the tolerance


def test_a_log_sum_exp_off_by_1e_4_is_caught(monkeypatch):
    """The check above fails on tiles whose log-sum-exp is 1e-4 too large (every weight of a
    row 1e-4 of itself too small)."""
    n = 8192
    q, k = _qk(n, seed=n)
    real = tiles.log_sum_exp
    monkeypatch.setattr(tiles, "log_sum_exp", lambda *a, **kw: real(*a, **kw) + 1e-4)
    lazy = LazyPatterns([q], [k], causal=True, scale=D_K**-0.5)
    lazy.tile = (16, 2048)  # the log-sum-exp path
    rows = _rows(n)
    got, ref = lazy.cells(0, 0, rows), _exact(q[0], k[0], rows)
    with pytest.raises(AssertionError, match="Not equal to tolerance"):
        _check(got, ref)
