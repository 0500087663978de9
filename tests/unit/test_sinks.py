"""Attention sinks (``analysis.sinks``): the first token's share per head against a direct loop,
and the first-key-hidden map's invariants (rows sum to 1, causal zeros stay zero)."""

from __future__ import annotations

import numpy as np
import pytest

from viz_transformer.analysis import sinks
from viz_transformer.figures import sinks as sink_figs
from viz_transformer.records.lazy import LazyPatterns


def _causal(layers: int, heads: int, n: int, seed: int = 0) -> np.ndarray:
    """Random causal softmax weights ``[layers, heads, n, n]``."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(layers, heads, n, n)) * 2
    scores[..., 0] += 3.0  # a sink on the first key
    scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def test_sink_mass_against_a_direct_loop() -> None:
    arr = _causal(3, 4, 7)
    mass = sinks.sink_mass(arr, "decoder")
    assert mass.shape == (3, 4)
    for layer in range(3):
        for head in range(4):
            want = np.mean([arr[layer, head, i, 0] for i in range(1, 7)])  # row 0 is always 1
            assert mass[layer, head] == pytest.approx(want, abs=1e-6)
    enc = sinks.sink_mass(arr, "encoder")  # every row counts
    np.testing.assert_allclose(enc, arr[..., 0].mean(-1), atol=1e-6)
    assert np.all(enc > mass)  # row 0's weight 1 on the first token is what decoder skips


def test_sink_mass_reads_lazy_patterns_head_by_head() -> None:
    rng = np.random.default_rng(1)
    q = [rng.normal(size=(4, 9, 8)).astype(np.float32) for _ in range(2)]
    k = [rng.normal(size=(2, 9, 8)).astype(np.float32) for _ in range(2)]  # GQA: 2 K/V heads
    lazy = LazyPatterns(q, k, causal=True)
    np.testing.assert_allclose(
        sinks.sink_mass(lazy, "decoder"), sinks.sink_mass(np.asarray(lazy), "decoder"), atol=1e-6
    )


def test_hidden_first_key_rows_renormalised_causal_zeros_kept() -> None:
    z = _causal(1, 1, 6)[0, 0]
    out = sinks.hide_first_key(z)
    assert out.shape == (6, 5)
    assert np.all(np.isnan(out[0]))  # the first query saw only the first token
    np.testing.assert_allclose(out[1:].sum(-1), 1.0, atol=1e-6)
    upper = np.triu(np.ones((6, 5), bool), k=1)[1:]  # key j + 1 > query i
    assert np.all(out[1:][upper[:5]] == 0.0)
    # the ratios between the remaining keys are unchanged
    np.testing.assert_allclose(out[4, 1] / out[4, 0], z[4, 2] / z[4, 1], rtol=1e-5)
    with pytest.raises(ValueError, match="k >= 2"):
        sinks.hide_first_key(z[:, :1])


def test_bad_shape_message() -> None:
    with pytest.raises(ValueError, match=r"\[layers, heads, q, k\]"):
        sinks.sink_mass(np.zeros((3, 3)), "encoder")


def test_top_sinks_and_figure_labels() -> None:
    mass = np.array([[0.1, 0.9, 0.2, 0.3], [0.8, 0.0, 0.5, 0.4]], np.float32)
    assert sinks.top_sinks(mass, 2) == [(0, 1, pytest.approx(0.9)), (1, 0, pytest.approx(0.8))]
    fig = sink_figs.sink_map_figure(mass, "decoder", "<s>", kv_of=(0, 0, 1, 1))
    assert list(fig.layout.xaxis.ticktext) == [
        "head 0<br>K/V 0", "head 1<br>K/V 0", "head 2<br>K/V 1", "head 3<br>K/V 1"
    ]  # fmt: skip
    assert "&lt;s&gt;" in fig.layout.title.text
    plain = sink_figs.sink_map_figure(mass, "encoder", "[CLS]", kv_of=(0, 1, 2, 3))
    assert list(plain.layout.xaxis.ticktext) == [f"head {h}" for h in range(4)]
