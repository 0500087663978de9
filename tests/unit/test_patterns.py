"""LazyPatterns: each head's softmax(q k^T) equals the eager array; indexing, guards, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from viz_transformer import settings
from viz_transformer.records.lazy import LazyPatterns, block_reduce, fits_in_memory, is_lazy
from viz_transformer.records.trace import Trace


def _eager(q: np.ndarray, k: np.ndarray, causal: bool) -> np.ndarray:
    """[L, H, q, k] from [L, H, q, d] and [L, Hkv, k, d], repeating shared key heads."""
    rep = q.shape[1] // k.shape[1]
    scores = torch.from_numpy(q) @ torch.from_numpy(np.repeat(k, rep, axis=1)).transpose(-1, -2)
    if causal:
        n_q, n_k = scores.shape[-2:]
        scores = scores.masked_fill(
            torch.ones(n_q, n_k, device=scores.device).triu(n_k - n_q + 1).bool(), -torch.inf
        )
    return torch.softmax(scores.double(), -1).float().numpy()


@pytest.fixture
def qk() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4, 9, 8)).astype(np.float32), rng.normal(size=(3, 2, 9, 8)).astype(
        np.float32
    )


@pytest.mark.parametrize("causal", [False, True])
def test_every_index_form_equals_the_eager_array(qk, causal):
    q, k = qk
    lazy, ref = LazyPatterns(list(q), list(k), causal), _eager(q, k, causal)
    assert lazy.shape == ref.shape and lazy.ndim == 4 and lazy.dtype == np.float32
    np.testing.assert_allclose(np.asarray(lazy), ref, atol=1e-6)
    np.testing.assert_allclose(lazy[2, 3], ref[2, 3], atol=1e-6)
    np.testing.assert_allclose(lazy[-1, -2], ref[-1, -2], atol=1e-6)
    np.testing.assert_allclose(lazy[1], ref[1], atol=1e-6)
    np.testing.assert_allclose(lazy[1, [0, 2]], ref[1, [0, 2]], atol=1e-6)
    np.testing.assert_allclose(lazy[0, 1:3, 4], ref[0, 1:3, 4], atol=1e-6)
    np.testing.assert_allclose(lazy[0, 1, 4:6, :3], ref[0, 1, 4:6, :3], atol=1e-6)
    np.testing.assert_allclose(lazy[:, 0], ref[:, 0], atol=1e-6)
    assert np.allclose(lazy[0, 0].sum(-1), 1.0, atol=1e-6)
    if causal:
        assert not np.triu(lazy[0, 0], 1).any()


def test_a_head_is_read_only_and_cached(qk):
    lazy = LazyPatterns(list(qk[0]), list(qk[1]), False)
    first = lazy[0, 0]
    assert lazy[0, 0] is first
    with pytest.raises(ValueError):
        first[0, 0] = 1.0


def test_pickling_keeps_the_data_and_drops_the_cache(qk):
    lazy = LazyPatterns(list(qk[0]), list(qk[1]), True)
    lazy[0, 0]
    copy = pickle.loads(pickle.dumps(lazy))
    np.testing.assert_array_equal(copy[1, 2], lazy[1, 2])
    assert copy.causal and copy.shape == lazy.shape


def test_materialising_too_much_is_refused_with_a_message(qk, monkeypatch):
    lazy = LazyPatterns(list(qk[0]), list(qk[1]), False)
    monkeypatch.setattr(settings, "MAX_MATERIALISE", 100)
    assert not fits_in_memory(lazy) and is_lazy(lazy)
    with pytest.raises(ValueError, match="block maxima"):
        np.asarray(lazy)
    assert lazy[0, 0].shape == (9, 9)  # one head (81 weights) is still fine
    monkeypatch.setattr(settings, "MAX_MATERIALISE", 80)  # one head is too many now
    with pytest.raises(ValueError, match=r"9 x 9 tokens: 81 weights .* \(cells, reduced"):
        lazy.head(1, 0)
    np.testing.assert_allclose(
        lazy.cells(1, 0, [3], [2, 5]), lazy.cells(1, 0)[3:4, [2, 5]], atol=1e-6
    )
    assert lazy.reduced(1, 0, 3)[0].shape == (3, 3)


def test_mismatched_queries_and_keys_are_refused():
    with pytest.raises(ValueError, match="do not pair"):
        LazyPatterns([np.zeros((3, 4, 8), np.float32)], [np.zeros((2, 4, 8), np.float32)], False)


def test_a_trace_validates_lazy_patterns_against_its_tokens(qk):
    lazy = LazyPatterns(list(qk[0]), list(qk[1]), False)
    tokens = tuple(f"t{i}" for i in range(9))
    trace = Trace("m", tokens, (), (), lazy, None, None).validate()
    assert trace.encoder is lazy
    with pytest.raises(ValueError, match="expected"):
        Trace("m", tokens[:5], (), (), lazy, None, None).validate()
    causal = LazyPatterns(list(qk[0]), list(qk[1]), True)
    with pytest.raises(ValueError, match="future"):  # decoder needs the causal mask...
        Trace(
            "m", (), tokens, (), None, LazyPatterns(list(qk[0]), list(qk[1]), False), None
        ).validate()
    Trace("m", (), tokens, (), None, causal, None).validate()  # ...and has it


def test_block_reduce_keeps_block_maxima_and_means():
    z = np.arange(36, dtype=np.float32).reshape(6, 6)
    out, bq, bk = block_reduce(z, 3, "max")
    assert (bq, bk) == (2, 2) and out.shape == (3, 3)
    assert out[0, 0] == 7 and out[2, 2] == 35 and out[0, 2] == 11
    mean, _, _ = block_reduce(z, 3, "mean")
    assert mean[0, 0] == pytest.approx((0 + 1 + 6 + 7) / 4)
    odd, bq, bk = block_reduce(np.arange(35, dtype=np.float32).reshape(7, 5), 3, "mean")
    assert odd.shape == (3, 3) and (bq, bk) == (3, 2)
    assert odd[2, 2] == pytest.approx(34.0)  # the corner block holds one cell
    assert odd[0, 2] == pytest.approx(np.mean([4, 9, 14]))
    same, bq, bk = block_reduce(z, 6)
    assert same is z and bq == bk == 1


@pytest.mark.parametrize("causal", [False, True])
def test_fewer_queries_than_keys_are_the_last_positions(causal):
    # the newest 3 positions querying a 7-token prefix, 4 query heads sharing 2 key heads
    rng = np.random.default_rng(1)
    q = rng.normal(size=(2, 4, 3, 8)).astype(np.float32)
    k = rng.normal(size=(2, 2, 7, 8)).astype(np.float32)
    lazy = LazyPatterns(list(q), list(k), causal)
    for layer, head in np.ndindex(2, 4):
        scores = q[layer, head].astype(np.float64) @ k[layer, head // 2].T.astype(np.float64)
        for i in range(3):  # query i is position i + 4: it sees keys 0 .. i + 4 when causal
            seen = i + 5 if causal else 7
            row = np.exp(scores[i, :seen] - scores[i, :seen].max())
            want = np.concatenate([row / row.sum(), np.zeros(7 - seen)])
            np.testing.assert_allclose(lazy[layer, head][i], want, atol=1e-6)


def test_a_nan_query_outside_the_sampled_rows_is_still_refused():
    """validate() reads 64 rows of a long lazy map, and checks every query and key is finite."""
    rng = np.random.default_rng(2)
    q = rng.normal(size=(1, 2, 200, 8)).astype(np.float32)
    k = rng.normal(size=(1, 2, 200, 8)).astype(np.float32)
    tokens = tuple(f"t{i}" for i in range(200))
    Trace("m", tokens, (), (), LazyPatterns(list(q), list(k), False), None, None).validate()
    q[0, 1, 5, 3] = np.nan  # row 5: not one of the 64 rows sampled (0, 3, 6, ...)
    with pytest.raises(ValueError, match="NaN or inf"):
        Trace("m", tokens, (), (), LazyPatterns(list(q), list(k), False), None, None).validate()
