"""Attention flow equals a maximum flow computed another way (networkx's preflow-push on float
capacities, our scipy Dinic on integer ones), on small random graphs, encoder-like and causal;
its first layer is rollout's first layer, and the page's limits hold."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import aggregate, flow
from viz_transformer.testing.paper import tiny_paper_model


def random_mixed(seed: int, layers: int, n: int, causal: bool) -> np.ndarray:
    """``[layers, n, n]`` row-stochastic matrices with a residual diagonal, as rollout mixes."""
    rng = np.random.default_rng(seed)
    heads = rng.dirichlet(np.full(n, 0.5), size=(layers, 2, n))  # [layers, heads, n, n]
    if causal:
        heads = heads * np.tril(np.ones((n, n)))
        heads = heads / heads.sum(-1, keepdims=True)
    return aggregate.with_residual(heads)


def networkx_flows(mixed: np.ndarray) -> np.ndarray:
    """The same flows, one ``nx.maximum_flow_value`` per (layer, position, input token)."""
    layers, n, _ = mixed.shape
    graph = nx.DiGraph()
    for layer in range(layers):
        for i in range(n):
            for j in range(n):
                if mixed[layer, i, j] > 0:
                    graph.add_edge((layer + 1, i), (layer, j), capacity=mixed[layer, i, j])
    out = np.zeros((layers, n, n))
    for layer in range(layers):
        for i in range(n):
            for j in range(n):
                out[layer, i, j] = nx.maximum_flow_value(graph, (layer + 1, i), (0, j))
    return out


GRAPHS = [(0, 3, 4, False), (1, 3, 5, True), (2, 4, 3, False), (3, 2, 6, True)]


@pytest.mark.parametrize(("seed", "layers", "n", "causal"), GRAPHS)
def test_flows_equal_networkx_maximum_flow(seed, layers, n, causal):
    mixed = random_mixed(seed, layers, n, causal)
    got = flow.flow_values(mixed)
    np.testing.assert_allclose(got, networkx_flows(mixed), atol=1e-6)
    np.testing.assert_allclose(got[0], mixed[0], atol=1e-6)  # one layer: each edge alone
    if causal:  # a position receives nothing from later input tokens
        assert (got[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0).all()


def test_flow_differs_from_rollout_where_paths_share_an_edge():
    # two layers; token 0 reaches position 0 after layer 1 along 0 -> 0 -> 0 and 0 -> 1 -> 0:
    # rollout adds the paths' products, flow is capped by the edges into position 0 at the top
    mixed = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.5, 0.5], [0.0, 1.0]]])
    got = flow.flow_values(mixed)
    rolled = mixed[1] @ mixed[0]
    assert rolled[0, 0] == pytest.approx(0.75)
    assert got[1, 0, 0] == pytest.approx(1.0, abs=1e-6)  # 0.5 direct + 0.5 via position 1
    assert got[1, 0, 1] == pytest.approx(0.5, abs=1e-6)


def test_attention_flow_of_a_trace_is_row_normalised_and_limited():
    model = tiny_paper_model(max_len=12)  # its random decoder writes max_len - 1 tokens
    trace = vt.trace(model, "alpha beta gamma delta epsilon")
    calls: list[float] = []
    out = flow.attention_flow(trace, "encoder", calls.append)
    n = trace.encoder.shape[-1]
    assert out.shape == (2, n, n) and calls[-1] == 1.0
    np.testing.assert_allclose(out.sum(-1), 1.0, atol=1e-12)
    raw = flow.flow_values(aggregate.with_residual(trace.encoder))
    np.testing.assert_allclose(out, raw / raw.sum(-1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(out[0], aggregate.rollout(trace.encoder)[0], atol=1e-6)
    decoder = flow.attention_flow(trace, "decoder")
    assert np.allclose(np.triu(decoder[-1], 1), 0.0)
    with pytest.raises(ValueError, match="square self-attention"):
        flow.attention_flow(trace, "cross")
    with pytest.raises(ValueError, match="offered up to 3 tokens"):
        flow.attention_flow(trace, "encoder", max_tokens=3)
