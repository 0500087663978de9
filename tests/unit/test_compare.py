"""Jensen-Shannon distances, Hungarian matching and drift as pure functions of arrays
(``analysis.comparison.distances``), and ``vt.compare`` on two tiny models' cross-attention,
checked against the definition and scipy one row at a time."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

import viz_transformer as vt
from viz_transformer.analysis.comparison.distances import (
    HeadMatch,
    drift_from_patterns,
    head_distances,
    js_distance,
    match_heads,
    pair_distance_sums,
    peak_agreement,
)
from viz_transformer.testing.paper import tiny_paper_model


def _patterns(rng: np.random.Generator, shape: tuple[int, ...], sharp: float = 3.0) -> np.ndarray:
    """Softmax rows of random scores, float32 like a Trace: ``[layers, heads, q, k]``."""
    z = rng.normal(size=shape) * sharp
    p = np.exp(z - z.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def test_js_distance_is_scipys_on_distinct_rows_and_zero_on_equal_ones() -> None:
    rng = np.random.default_rng(0)
    p, q = _patterns(rng, (50, 9)), _patterns(rng, (50, 9))
    want = jensenshannon(p.astype(np.float64), q.astype(np.float64), base=2, axis=-1)
    np.testing.assert_allclose(js_distance(p, q), want, rtol=1e-6)  # scipy renormalises
    assert np.all(js_distance(p, p) == 0.0)  # exactly: (p + p) / 2 is p in float64
    # disjoint supports are as far apart as two rows can be; zeros (a causal row) are 0 log 0 = 0
    assert js_distance(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)


def test_near_identical_rows_give_a_small_finite_distance() -> None:
    p = np.array([0.5, 0.3, 0.2], np.float32)
    q = (p + np.array([1e-7, -1e-7, 0.0])).astype(np.float32)
    d = float(js_distance(p, q))
    assert np.isfinite(d) and 0.0 <= d < 1e-5


def test_every_query_row_of_every_sentence_weighs_the_same() -> None:
    rng = np.random.default_rng(1)
    a = [_patterns(rng, (2, 3, 4, 4)), _patterns(rng, (2, 3, 7, 7))]
    b = [_patterns(rng, (1, 2, 4, 4)), _patterns(rng, (1, 2, 7, 7))]
    d = head_distances(a, b)
    assert d.shape == (2, 3, 1, 2) and d.dtype == np.float64
    for la, ha, lb, hb in np.ndindex(d.shape):  # the mean over the 11 rows, one by one
        rows = [
            js_distance(x[la, ha, r], y[lb, hb, r])
            for x, y in zip(a, b, strict=True)
            for r in range(x.shape[2])
        ]
        assert d[la, ha, lb, hb] == pytest.approx(np.mean(rows), abs=1e-12)
    with pytest.raises(ValueError, match="same tokens"):
        pair_distance_sums(a[0], b[1])


def test_matching_recovers_a_permutation_sorted_by_a() -> None:
    rng = np.random.default_rng(2)
    base = _patterns(rng, (3, 4, 6, 6))
    perm = [rng.permutation(4) for _ in range(3)]
    b = np.stack([base[layer][perm[layer]] for layer in range(3)])  # b[l, i] = a[l, perm[l][i]]
    order = rng.permutation(3)
    d = head_distances([base], [b[order]])  # layers of b shuffled too
    matching = match_heads(d)
    assert [m.a for m in matching] == [(la, ha) for la in range(3) for ha in range(4)]
    for m in matching:
        lb, hb = m.b
        assert (order[lb], perm[order[lb]][hb]) == m.a and m.distance == 0.0


def test_matching_of_unequal_head_counts_pairs_the_smaller_side_at_least_cost() -> None:
    d = np.random.default_rng(3).random((2, 3, 1, 2))  # 6 heads of A, 2 of B
    flat = d.reshape(6, 2)
    best = min(flat[i, 0] + flat[j, 1] for i in range(6) for j in range(6) if i != j)
    matching = match_heads(d)
    assert len(matching) == 2 and {m.b for m in matching} == {(0, 0), (0, 1)}
    assert matching[0].a < matching[1].a
    assert sum(m.distance for m in matching) == pytest.approx(best)


def test_drift_is_zero_at_the_last_checkpoint_and_grows_with_change() -> None:
    rng = np.random.default_rng(4)
    last = [_patterns(rng, (2, 2, 5, 5))]
    near = [(0.9 * last[0] + 0.1 / 5).astype(np.float32)]
    far = [_patterns(rng, (2, 2, 5, 5))]
    drift = drift_from_patterns([far, near, last])
    assert drift.shape == (3, 2, 2)
    assert np.all(drift[-1] == 0.0)
    assert np.all(drift[0] > drift[1]) and np.all(drift[1] > 0)


def _row_mean(a: list[np.ndarray], b: list[np.ndarray], ia: tuple, ib: tuple) -> float:
    """Mean of scipy's JS distance over every query row of every sentence, one row at a time."""
    rows = [
        jensenshannon(x[ia][r].astype(np.float64), y[ib][r].astype(np.float64), base=2)
        for x, y in zip(a, b, strict=True)
        for r in range(x.shape[2])
    ]
    return float(np.mean(rows))


def test_cross_attention_averages_over_query_rows_not_keys() -> None:
    rng = np.random.default_rng(5)
    # cross-attention: more query rows (outputs) than keys (source tokens), and the reverse
    a = [_patterns(rng, (1, 2, 9, 3)), _patterns(rng, (1, 2, 2, 6))]
    b = [_patterns(rng, (2, 1, 9, 3)), _patterns(rng, (2, 1, 2, 6))]
    d = head_distances(a, b)
    for ia in np.ndindex(1, 2):
        for ib in np.ndindex(2, 1):
            assert d[ia + ib] == pytest.approx(_row_mean(a, b, ia, ib), rel=1e-6)
    assert d.max() <= 1.0


def test_compare_on_cross_attention_is_the_definition_applied_to_traces() -> None:
    a, b = tiny_paper_model(0, max_len=10), tiny_paper_model(1, max_len=10, n_decoder_layers=1)
    texts = ["alpha beta", "gamma delta epsilon zeta"]  # 3 and 5 keys, 10 rows each
    result = vt.compare(a, b, texts, kind="cross")
    tr_a = [vt.trace(a, s) for s in texts]
    tr_b = [vt.trace(b, s, target=t.output_text) for s, t in zip(texts, tr_a, strict=True)]
    pa, pb = [t.cross for t in tr_a], [t.cross for t in tr_b]
    assert {p.shape[2] != p.shape[3] for p in pa} == {True}  # rows and keys differ
    assert result.distance.shape == (2, 2, 1, 2)
    for ia in np.ndindex(2, 2):
        for ib in np.ndindex(1, 2):
            assert result.distance[ia + ib] == pytest.approx(_row_mean(pa, pb, ia, ib), rel=1e-6)
    assert result.rows == sum(len(t.tgt_tokens) for t in tr_a)


def test_drift_is_the_mean_over_every_row_of_every_sentence() -> None:
    rng = np.random.default_rng(6)
    shapes = [(2, 3, 1, 4), (2, 3, 6, 6), (2, 3, 3, 8)]  # sentences of 1, 6 and 3 rows
    checkpoints = [[_patterns(rng, s, sharp=8.0) for s in shapes] for _ in range(3)]
    drift = drift_from_patterns(checkpoints)
    assert drift.shape == (3, 2, 3)
    for c in range(3):
        for head in np.ndindex(2, 3):
            want = _row_mean(checkpoints[c], checkpoints[-1], head, head)
            assert drift[(c, *head)] == pytest.approx(want, rel=1e-6, abs=1e-12)
    assert 0.5 < drift[0].max() <= 1.0  # far apart, and still a distance


def test_peak_agreement_counts_rows_whose_strongest_key_is_the_same():
    rng = np.random.default_rng(0)
    a = [rng.dirichlet(np.ones(n), size=(2, 3, n)) for n in (4, 7)]  # [layers, heads, q, k]
    b = [rng.dirichlet(np.ones(n), size=(2, 3, n)) for n in (4, 7)]
    pair = HeadMatch((1, 2), (0, 1), 0.5)
    same = [
        x[1, 2, row].argmax() == y[0, 1, row].argmax()
        for x, y in zip(a, b, strict=True)
        for row in range(x.shape[2])
    ]
    assert peak_agreement(a, b, pair) == pytest.approx(sum(same) / len(same))
    sharper = [np.where(x == x.max(-1, keepdims=True), 0.97, 0.03 / (x.shape[-1] - 1)) for x in a]
    assert peak_agreement(a, sharper, HeadMatch((1, 2), (1, 2), 0.2)) == 1.0  # same focus


def test_matching_names_each_models_heads_in_its_own_layout() -> None:
    # A: 1 layer x 2 heads; B: 2 layers x 3 heads (flat index 4 of B is layer 1, head 1)
    a = _patterns(np.random.default_rng(7), (1, 2, 5, 5))
    b = _patterns(np.random.default_rng(8), (2, 3, 5, 5))
    b[1, 1], b[0, 2] = a[0, 0], a[0, 1]
    matching = match_heads(head_distances([a], [b]))
    assert [(m.a, m.b, m.distance) for m in matching] == [
        ((0, 0), (1, 1), 0.0),
        ((0, 1), (0, 2), 0.0),
    ]
