"""A head computed in tiles where its queries and keys live (``records.tiles``) gives the same cells
as one direct softmax over the whole map (float64 numpy): odd sizes, causal masks with more keys
than queries, padded keys, chosen rows and columns, block maxima and means, many tile sizes.

Runs on ``VT_DEVICE`` (else the machine's best device), where a trace would keep its queries and
keys; what comes back is CPU float32 numpy.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from viz_transformer.models.devices import default_device
from viz_transformer.records import tiles
from viz_transformer.records.lazy import LazyPatterns, block_reduce, drawn

DEVICE = default_device()
TILES = [None, (1, 1000), (5, 7), (16, 8), (7, 3)]  # None: the default plan (whole rows)
CASES = {  # n_q, n_k, causal, padded keys
    "odd cross": (37, 53, False, False),
    "causal square": (61, 61, True, False),
    "causal, more keys": (29, 45, True, False),
    "padded keys": (41, 50, False, True),
    "causal, padded": (33, 33, True, True),
}


def direct(q: np.ndarray, k: np.ndarray, causal: bool, ok: np.ndarray | None) -> np.ndarray:
    """softmax(q k^T) of one head, written plainly in float64."""
    s = q.astype(np.float64) @ k.astype(np.float64).T
    n_q, n_k = s.shape
    if causal:
        s[np.arange(n_k)[None, :] > np.arange(n_q)[:, None] + (n_k - n_q)] = -np.inf
    if ok is not None:
        s[:, ~ok] = -np.inf
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _case(name: str, d: int = 8, seed: int = 0):
    n_q, n_k, causal, padded = CASES[name]
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(2, 4, n_q, d)).astype(np.float32)  # 2 layers, 4 query heads
    k = rng.normal(size=(2, 2, n_k, d)).astype(np.float32)  # 2 key heads (grouped)
    ok = None
    if padded:
        ok = rng.random(n_k) > 0.3
        ok[0] = True  # every row sees a key (a row that sees none is NaN either way)
    on = [torch.from_numpy(x).to(DEVICE) for x in (*q, *k)]
    lazy = LazyPatterns(on[:2], on[2:], causal, ok)
    return lazy, direct(q[1, 3], k[1, 1], causal, ok)  # layer 1, head 3 reads key head 1


@pytest.mark.parametrize("tile", TILES, ids=str)
@pytest.mark.parametrize("name", CASES)
def test_tiled_cells_equal_one_direct_softmax(name, tile):
    lazy, ref = _case(name)
    lazy.tile = tile
    assert lazy.device.type == DEVICE.type
    whole = lazy.head(1, 3)
    assert type(whole) is np.ndarray and whole.dtype == np.float32
    np.testing.assert_allclose(whole, ref, atol=1e-6)
    n_q, n_k = ref.shape
    rows, cols = np.arange(3, n_q, 2), np.arange(n_k)[::-3]  # scattered, columns reversed
    np.testing.assert_allclose(lazy.cells(1, 3, rows, cols), ref[np.ix_(rows, cols)], atol=1e-6)
    np.testing.assert_allclose(lazy.cells(1, 3, [n_q - 1]), ref[-1:], atol=1e-6)  # a hover row


@pytest.mark.parametrize("how", ["max", "mean"])
@pytest.mark.parametrize("tile", TILES, ids=str)
@pytest.mark.parametrize("name", CASES)
def test_tiled_blocks_equal_blocks_of_the_direct_map(name, tile, how):
    lazy, ref = _case(name)
    lazy.tile = tile
    n_q, n_k = ref.shape
    for rows, cols in [(np.arange(n_q), np.arange(n_k)), (np.arange(1, n_q, 2), np.arange(2, n_k))]:
        want = block_reduce(ref[np.ix_(rows, cols)].astype(np.float32), 6, how)
        got = lazy.reduced(1, 3, 6, how, rows, cols)
        assert got[1:] == want[1:] and got[0].shape == want[0].shape
        np.testing.assert_allclose(got[0], want[0], atol=1e-6)


@pytest.mark.parametrize("tile", [None, (64, 128), (100, 999)], ids=str)
def test_a_medium_causal_head_with_two_pass_tiles(tile):
    """513 x 700 (no side a multiple of a tile), scaled 64-dim queries: the two-pass softmax
    (row max and sum over every key first) agrees with the direct one."""
    rng = np.random.default_rng(3)
    q = (rng.normal(size=(1, 1, 513, 64)) / 8).astype(np.float32)
    k = rng.normal(size=(1, 1, 700, 64)).astype(np.float32)
    lazy = LazyPatterns(list(q), list(k), True, device=DEVICE)
    lazy.tile = tile
    ref = direct(q[0, 0], k[0, 0], True, None)
    np.testing.assert_allclose(lazy.head(0, 0), ref, atol=1e-6)
    for how in ("max", "mean"):
        got, bq, bk = lazy.reduced(0, 0, 64, how)
        np.testing.assert_allclose(got, block_reduce(ref.astype(np.float32), 64, how)[0], atol=1e-6)
        assert (bq, bk) == (9, 11) and got.shape == (57, 64)


def test_the_plan_keeps_blocks_inside_tiles_and_whole_rows_when_they_fit():
    cpu = torch.device("cpu")
    rows, keys = tiles.plan(4096, cpu, (16, 16))
    assert keys >= 4096 and rows % 16 == 0 and rows * 4096 <= tiles.TILE_CELLS["cpu"]
    rows, keys = tiles.plan(10**7, cpu, (3, 5))  # a row longer than a tile: two passes
    assert keys < 10**7 and keys % 5 == 0 and rows % 3 == 0
    assert tiles.plan(100, cpu, (4, 6), tile=(5, 7)) == (8, 12)


def test_drawn_reads_a_lazy_head_and_an_array_alike():
    lazy, _ = _case("causal square")
    arr = np.asarray(lazy)
    rows, cols = np.arange(60), np.arange(1, 61)
    for limit in (None, 8):
        a, b = drawn(lazy, 1, 3, rows, cols, limit), drawn(arr, 1, 3, rows, cols, limit)
        assert a[1:] == b[1:]
        np.testing.assert_allclose(a[0], b[0], atol=1e-6)


def test_positions_outside_the_map_are_refused_before_reaching_the_device():
    lazy, _ = _case("odd cross")
    with pytest.raises(IndexError, match=r"key positions 0\.\.53 lie outside 0\.\.52"):
        lazy.cells(0, 0, None, np.arange(54))
    with pytest.raises(ValueError, match="key_mask has shape"):
        LazyPatterns([np.zeros((1, 3, 2), np.float32)], [np.zeros((1, 4, 2), np.float32)],
                     False, np.ones(3, bool))  # fmt: skip


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("tile", [None, (5, 7)], ids=str)
def test_half_precision_queries_stay_half_and_give_float32_rows(half, tile):
    """A model run in bfloat16 gives bfloat16 queries and keys: they are kept so (half of
    float32's memory at 32k tokens) and each tile is scored in float32, so the map equals the
    float64 softmax of those same rounded values, rows summing to 1."""
    n_q, n_k, causal, _ = CASES["causal, padded"]
    rng = np.random.default_rng(3)
    q = torch.from_numpy(rng.normal(size=(1, 2, n_q, 8)).astype(np.float32)).to(half)
    k = torch.from_numpy(rng.normal(size=(1, 1, n_k, 8)).astype(np.float32)).to(half)
    lazy = LazyPatterns([q[0].to(DEVICE)], [k[0].to(DEVICE)], causal)
    lazy.tile = tile
    assert lazy.kept_dtype == half and lazy._in.qk(0)[1].dtype == half
    ref = direct(q[0, 1].float().numpy(), k[0, 0].float().numpy(), causal, None)
    whole = lazy.head(0, 1)
    assert whole.dtype == np.float32
    np.testing.assert_allclose(whole, ref, atol=1e-6)
    np.testing.assert_allclose(whole.sum(-1), 1.0, atol=1e-5)
    restored = pickle.loads(pickle.dumps(lazy))  # st.cache_data's copy: float32 on the host
    np.testing.assert_allclose(restored.head(0, 1), ref, atol=1e-6)


@pytest.mark.parametrize("tile", [None, (5, 7)], ids=str)
def test_the_scale_multiplies_each_float32_tile_not_the_half_queries(tile):
    """A bfloat16 model's queries are kept unscaled; its 1/sqrt(d_k) (48 ** -0.5, no power of
    two) multiplies each float32 tile, so the map is the float64 softmax of the scaled rounded
    values. Scaling the bfloat16 queries first rounds them once more (~1e-3 off here); a scale per
    layer reaches its own layer."""
    n_q, n_k, causal, _ = CASES["causal, more keys"]
    rng = np.random.default_rng(5)
    q = torch.from_numpy(rng.normal(size=(2, 1, n_q, 48)).astype(np.float32)).to(DEVICE).bfloat16()
    k = torch.from_numpy(rng.normal(size=(2, 1, n_k, 48)).astype(np.float32)).to(DEVICE).bfloat16()
    scales = [48**-0.5, 0.3]
    lazy = LazyPatterns(list(q.to(DEVICE)), list(k.to(DEVICE)), causal, scale=scales)
    lazy.tile = tile
    assert lazy.kept_dtype == torch.bfloat16
    for layer, scale in enumerate(scales):
        q64, k64 = (x[layer, 0].double().numpy() for x in (q, k))
        ref = direct(q64 * scale, k64, causal, None)
        np.testing.assert_allclose(lazy.head(layer, 0), ref, atol=1e-6, err_msg=f"layer {layer}")
    with pytest.raises(ValueError, match="one per layer"):
        LazyPatterns(list(q), list(k), causal, scale=[1.0])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_kept_queries_are_copied_only_where_they_share_a_buffer(dtype):
    """Llama's queries after RoPE, ``(H, T, d)`` over a ``(T, H, d)`` buffer of their own, are
    kept as they are (a contiguous copy held both, every layer's); GPT-2's q, a slice of its fused
    q|k|v, is copied so that it keeps no k and v alive."""
    q = torch.randn(1, 6, 4, 8).to(dtype).transpose(1, 2)[0]  # (H, T, d), strided
    kept = tiles.as_stored(q, None)
    assert not q.is_contiguous() and kept.data_ptr() == q.data_ptr() and torch.equal(kept, q)
    fused = torch.randn(6, 3 * 8).to(dtype)
    part = fused[:, 8:16]
    kept = tiles.as_stored(part, None)
    assert kept.data_ptr() != part.data_ptr() and torch.equal(kept, part)
    assert kept.untyped_storage().nbytes() == part.nbytes
