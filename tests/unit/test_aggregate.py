"""Head mean / max, attention rollout and per-head statistics against hand-computed examples
and their definitions written row by row."""

from __future__ import annotations

import numpy as np
import pytest

from viz_transformer.analysis import aggregate

# two layers, two heads, three tokens; every row sums to 1
A0 = np.array(
    [
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]],
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
    ]
)
A1 = np.array(
    [
        [[1 / 3, 1 / 3, 1 / 3]] * 3,
        [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
    ]
)
ARR = np.stack([A0, A1]).astype(np.float32)  # [2, 2, 3, 3]


def random_attention(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = np.exp(rng.normal(size=shape))
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


def test_special_tokens_of_every_family_are_recognised():
    for token in ("</s>", "<s>", "[CLS]", "[SEP]", "<pad>", "<unk>", "<|endoftext|>", " </s>"):
        assert aggregate.is_special(token), token
    for token in ("the", "</", "<b>", "[cls", "s", "▁</s>x", "|"):
        assert not aggregate.is_special(token), token
    tokens = ("[CLS]", "the", "cat", "[SEP]")
    np.testing.assert_array_equal(aggregate.special_mask(tokens), [True, False, False, True])
    np.testing.assert_array_equal(aggregate.kept_positions(tokens, True), [1, 2])
    np.testing.assert_array_equal(aggregate.kept_positions(tokens, False), [0, 1, 2, 3])


def test_head_mean_and_max_by_hand():
    mean = aggregate.head_mean(ARR)
    assert mean.shape == (2, 3, 3)
    np.testing.assert_allclose(mean[0, 1], [0.25, 0.25, 0.5])
    np.testing.assert_allclose(mean.sum(-1), 1.0, atol=1e-6)
    top = aggregate.head_max(ARR)
    np.testing.assert_allclose(top[0, 2], [1.0, 0.3, 0.5])
    np.testing.assert_allclose(top[1, 0], [1 / 3, 1 / 3, 1.0], atol=1e-6)


def test_rollout_of_one_layer_is_half_mean_plus_identity():
    one = ARR[:1]
    expected = 0.5 * (aggregate.head_mean(one)[0] + np.eye(3))
    np.testing.assert_allclose(aggregate.rollout(one)[0], expected, atol=1e-6)


def test_rollout_of_two_layers_multiplies_the_later_layer_on_the_left():
    first = 0.5 * (A0.mean(0) + np.eye(3))
    second = 0.5 * (A1.mean(0) + np.eye(3))
    out = aggregate.rollout(ARR)
    np.testing.assert_allclose(out[0], first, atol=1e-6)
    np.testing.assert_allclose(out[1], second @ first, atol=1e-6)
    # the hand value of one cell: row 0 of the second layer mixes first-layer rows
    assert out[1, 0, 0] == pytest.approx(second[0] @ first[:, 0], abs=1e-6)


def test_rollout_rows_sum_to_one_and_identity_attention_rolls_out_to_identity():
    rng = np.random.default_rng(0)
    out = aggregate.rollout(random_attention(rng, (4, 3, 6, 6)))
    assert out.shape == (4, 6, 6)
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-9)
    eye = np.broadcast_to(np.eye(5, dtype=np.float32), (3, 2, 5, 5))
    np.testing.assert_allclose(aggregate.rollout(eye), np.broadcast_to(np.eye(5), (3, 5, 5)))


def test_rollout_of_causal_attention_stays_causal():
    rng = np.random.default_rng(1)
    causal = np.tril(random_attention(rng, (2, 2, 5, 5)))
    causal /= causal.sum(-1, keepdims=True)
    out = aggregate.rollout(causal)
    assert not np.triu(out, k=1).any()
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-9)


def test_rollout_refuses_cross_attention_and_bad_shapes():
    with pytest.raises(ValueError, match="cross-attention"):
        aggregate.rollout(np.full((1, 1, 2, 3), 1 / 3))
    with pytest.raises(ValueError, match="layers, heads"):
        aggregate.head_mean(np.ones((3, 3)))


def test_head_stats_by_hand():
    tokens = ("a", "b", "</s>")
    stats = aggregate.head_stats(ARR, tokens, self_attention=True)
    assert tuple(stats) == aggregate.STAT_COLUMNS
    np.testing.assert_array_equal(stats["layer"], [0, 0, 1, 1])
    np.testing.assert_array_equal(stats["head"], [0, 1, 0, 1])
    # layer 0 head 0: rows (1,0,0), (.5,.5,0), (.2,.3,.5)
    h = [0.0, np.log(2), -(0.2 * np.log(0.2) + 0.3 * np.log(0.3) + 0.5 * np.log(0.5))]
    assert stats["entropy"][0] == pytest.approx(np.mean(h), abs=1e-6)
    assert stats["max_weight"][0] == pytest.approx((1 + 0.5 + 0.5) / 3, abs=1e-6)
    assert stats["special_share"][0] == pytest.approx(0.5 / 3, abs=1e-6)
    assert stats["diagonal_distance"][0] == pytest.approx((0 + 0.5 + (0.4 + 0.3)) / 3, abs=1e-6)
    # layer 0 head 1: one-hot rows 0->1, 1->2, 2->0: no entropy, distance (1 + 1 + 2) / 3
    assert stats["entropy"][1] == pytest.approx(0.0, abs=1e-6)
    assert stats["max_weight"][1] == pytest.approx(1.0)
    assert stats["special_share"][1] == pytest.approx(1 / 3, abs=1e-6)
    assert stats["diagonal_distance"][1] == pytest.approx(4 / 3, abs=1e-6)
    # layer 1 head 0: uniform rows have the largest entropy, log 3
    assert stats["entropy"][2] == pytest.approx(np.log(3), abs=1e-6)


def test_head_stats_of_cross_attention_have_no_diagonal_and_check_tokens():
    rng = np.random.default_rng(2)
    cross = random_attention(rng, (2, 3, 4, 5))
    stats = aggregate.head_stats(cross, ["x"] * 4 + ["</s>"], self_attention=False)
    assert np.isnan(stats["diagonal_distance"]).all() and len(stats["entropy"]) == 6
    np.testing.assert_allclose(stats["special_share"], cross[..., -1].mean(-1).reshape(-1), 1e-6)
    assert (stats["entropy"] <= np.log(5) + 1e-6).all()
    with pytest.raises(ValueError, match="key tokens"):
        aggregate.head_stats(cross, ["x"] * 4, self_attention=False)


def test_head_stats_equal_the_definitions_row_by_row():
    rng = np.random.default_rng(3)
    arr = random_attention(rng, (2, 3, 5, 5))
    tokens = ("<s>", "a", "b", "a", "</s>")  # two special keys: their weights add up
    stats = aggregate.head_stats(arr, tokens, self_attention=True)
    for row, (layer, head) in enumerate(np.ndindex(2, 3)):
        A = arr[layer, head].astype(np.float64)
        rows = range(A.shape[0])
        want = {
            "layer": layer,
            "head": head,
            "entropy": np.mean([-sum(p * np.log(p) for p in A[i] if p > 0) for i in rows]),
            "max_weight": np.mean([max(A[i]) for i in rows]),
            "special_share": np.mean([A[i, 0] + A[i, 4] for i in rows]),
            "diagonal_distance": np.mean([sum(A[i, j] * abs(i - j) for j in rows) for i in rows]),
        }
        for name, value in want.items():
            assert stats[name][row] == pytest.approx(value, abs=1e-6), (name, layer, head)
