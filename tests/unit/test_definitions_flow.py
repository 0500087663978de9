"""Attention flow (``vt.attention_flow``) against flows worked out by hand on graphs of two and
three tokens: one layer is rollout's mixed matrix itself; with two layers each flow is the
smaller of what the paths' edges can carry, shared where paths meet; rows share out 1; a trace
as long as the limit is computed, one token longer is refused."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import flow
from viz_transformer.records.progress import Cancelled


def fake_trace(encoder: np.ndarray) -> SimpleNamespace:
    """What ``attention_flow`` reads of a trace: ``get(kind)``, encoder patterns only."""
    return SimpleNamespace(get=lambda kind: encoder if kind == "encoder" else None)


def test_one_layer_flow_is_the_mixed_matrix():
    heads = np.array([[[[0.2, 0.8], [0.6, 0.4]], [[1.0, 0.0], [0.0, 1.0]]]])  # [1, 2, 2, 2]
    # rollout's mix: (mean over heads + identity) / 2, rows summing to 1
    mixed = np.array([[0.5 * (0.6 + 1), 0.5 * 0.4], [0.5 * 0.3, 0.5 * (0.7 + 1)]])
    got = vt.attention_flow(fake_trace(heads), "encoder")
    np.testing.assert_allclose(got[0], mixed, atol=1e-6)


def test_two_layers_share_an_edge_by_hand():
    # mixed layer 0: token 0 keeps itself; position 1 takes half of each
    # mixed layer 1: position 0 takes a quarter from position 1, position 1 keeps itself
    mixed = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.75, 0.25], [0.0, 1.0]]])
    got = flow.flow_values(mixed)
    np.testing.assert_allclose(got[0], mixed[0], atol=1e-6)
    # top position 0 -> input 0: 0 -> 0 -> 0 carries 0.75; 0 -> 1 -> 0 carries min(0.25, 0.5)
    # top position 0 -> input 1: only 0 -> 1 -> 1, min(0.25, 0.5)
    # top position 1 -> input 0: 1 -> 1 -> 0, min(1, 0.5); -> input 1: min(1, 0.5)
    want = np.array([[0.75 + 0.25, 0.25], [0.5, 0.5]])
    np.testing.assert_allclose(got[1], want, atol=1e-6)
    normalised = want / want.sum(-1, keepdims=True)
    heads = np.stack([2 * m - np.eye(2) for m in mixed])[:, None]  # one head mixing to ``mixed``
    np.testing.assert_allclose(
        vt.attention_flow(fake_trace(heads), "encoder")[1], normalised, atol=1e-6
    )


def test_a_path_is_capped_by_its_narrowest_edge():
    # three tokens, two layers: position 2 reaches input 0 only through position 1 (0.1 wide)
    mixed = np.array(
        [
            [[1.0, 0.0, 0.0], [0.4, 0.6, 0.0], [0.0, 0.0, 1.0]],
            [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.1, 0.9]],
        ]
    )
    got = flow.flow_values(mixed)
    assert got[1, 2, 0] == pytest.approx(0.1, abs=1e-6)  # min(0.1, 0.4)
    assert got[1, 2, 1] == pytest.approx(0.1, abs=1e-6)  # min(0.1, 0.6)
    assert got[1, 2, 2] == pytest.approx(0.9, abs=1e-6)
    assert got[1, 1, 0] == pytest.approx(0.4, abs=1e-6)
    assert got[1, 0, 1] == got[1, 0, 2] == 0.0


def test_flow_rows_share_out_one_and_progress_ends_at_one():
    rng = np.random.default_rng(4)
    heads = rng.dirichlet(np.ones(4), size=(3, 2, 4))  # [3 layers, 2 heads, 4, 4]
    seen: list[float] = []
    got = vt.attention_flow(fake_trace(heads), "encoder", progress=seen.append)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-9)
    assert seen[-1] == 1.0 and seen == sorted(seen)
    assert not np.allclose(got.sum(-2), 1.0, atol=1e-3)  # columns need not


def test_the_token_limit_is_inclusive():
    heads = np.full((1, 1, 3, 3), 1 / 3)
    assert vt.attention_flow(fake_trace(heads), "encoder", max_tokens=3).shape == (1, 3, 3)
    with pytest.raises(ValueError, match="offered up to 2 tokens"):
        vt.attention_flow(fake_trace(heads), "encoder", max_tokens=2)
    with pytest.raises(ValueError, match="no decoder attention"):
        vt.attention_flow(fake_trace(heads), "decoder")


def test_its_stop_token_ends_the_flow_at_a_progress_point(monkeypatch):
    monkeypatch.setattr(flow, "PROGRESS_EVERY", 0.0)  # a report after every layer
    stop, seen = vt.StopToken(), []

    def press_stop(fraction: float) -> None:
        seen.append(fraction)
        stop.set()

    heads = np.full((3, 1, 3, 3), 1 / 3)  # three layers of uniform rows
    with pytest.raises(Cancelled):
        vt.attention_flow(fake_trace(heads), "encoder", press_stop, stop=stop)
    assert len(seen) == 1 and seen[0] < 1.0  # ended at the first report
