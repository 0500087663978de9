"""The Q, K, V walkthrough's numbers, checked in the unit tier against the paper's equations
recomputed here from the tiny paper model's own weights (d_model 16, 2 heads, d_k 8): the layer
input (sqrt(d_model) * embedding + PE, section 3.4-3.5), q, k, v (3.2.2), q . k, the division by
sqrt(d_k) (Eq. 1), the softmax and its mask, z, the concatenation and W^O. A wrong scale, a
swapped axis or an off-by-one in the mask fails here, in seconds."""

from __future__ import annotations

import math

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.models.own_qkv import attention_module
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.testing.paper import tiny_paper_model

TEXT = "alpha beta gamma"
KINDS = ("encoder", "decoder", "cross")


@pytest.fixture(scope="module", params=[True, False], ids=["scaled", "unscaled"])
def model(request: pytest.FixtureRequest) -> vt.LoadedModel:
    return tiny_paper_model(scale_scores=request.param, max_len=8)


def linear(module, part: str) -> tuple[np.ndarray, np.ndarray]:
    lin = getattr(module, f"W_{part}")
    return lin.weight.detach().cpu().double().numpy(), lin.bias.detach().cpu().double().numpy()


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("kind", KINDS)
def test_every_step_is_the_papers_equation_on_the_models_weights(model, kind):
    trace = vt.trace(model, TEXT)
    cap = wt.capture(model, TEXT, kind)
    weights = np.asarray(trace.get(kind))
    d_k = cap.d_k
    assert d_k == 8 and cap.n_heads == 2
    for layer in range(cap.n_layers):
        attn = attention_module(model.module, kind, layer)
        (w_q, b_q), (w_k, b_k), (w_v, b_v), (w_o, b_o) = (linear(attn, p) for p in "qkvo")
        for head in range(cap.n_heads):
            cols = slice(head * d_k, (head + 1) * d_k)
            steps = [wt.explain(cap, layer, head, p) for p in range(len(cap.query_tokens))]
            inputs = np.stack([w.x for w in steps])  # (Tq, d): every query's layer input
            for pos, w in enumerate(steps):
                # q from the query's input, this head's columns of W_q
                np.testing.assert_allclose(w.q, (w.x @ w_q.T + b_q)[cols], atol=1e-5)
                if kind != "cross":  # self-attention: keys and values from the same inputs
                    np.testing.assert_allclose(w.k, (inputs @ w_k.T + b_k)[:, cols], atol=1e-5)
                    np.testing.assert_allclose(w.v, (inputs @ w_v.T + b_v)[:, cols], atol=1e-5)
                raw = w.k @ w.q
                np.testing.assert_allclose(w.raw, raw, rtol=1e-9, atol=1e-9)
                divisor = math.sqrt(d_k) if model.module.cfg.scale_scores else 1.0
                assert w.divided is model.module.cfg.scale_scores
                keep = np.arange(len(cap.key_tokens)) <= pos if kind == "decoder" else None
                if keep is not None:
                    np.testing.assert_array_equal(w.keep, keep)  # causal: j <= i, no more
                else:
                    assert w.keep.all()
                np.testing.assert_allclose(w.scaled[w.keep], raw[w.keep] / divisor, rtol=1e-12)
                assert np.isneginf(w.scaled[~w.keep]).all()
                expect = np.zeros(len(raw))
                expect[w.keep] = softmax(raw[w.keep] / divisor)
                np.testing.assert_allclose(w.weights, expect, atol=1e-12)
                np.testing.assert_allclose(w.weights, weights[layer, head, pos], atol=1e-5)
                np.testing.assert_allclose(w.z, expect @ w.v, atol=1e-12)
                np.testing.assert_allclose(w.concat[cols], w.z, atol=1e-12)
                np.testing.assert_allclose(w.out, w.concat @ w_o.T + b_o, atol=1e-9)


def test_the_first_layers_input_is_the_scaled_embedding_plus_the_sinusoid(model):
    cap = wt.capture(model, TEXT, "encoder")
    table = sinusoidal_table(8, 16)
    emb = model.module.src_embed.weight.detach().cpu().double().numpy()
    ids = [model.vocab.index[t] for t in cap.query_tokens]
    for pos, token_id in enumerate(ids):
        w = wt.explain(cap, 0, 0, pos)
        np.testing.assert_allclose(w.embed, emb[token_id] * math.sqrt(16), rtol=1e-6)
        np.testing.assert_allclose(w.pos, table[pos], atol=1e-6)
        np.testing.assert_allclose(w.x, w.embed + w.pos, atol=1e-5)


def test_one_range_check_names_what_does_not_exist_and_the_range(model):
    """``KindCapture.check``: the walkthrough, the score split and a head's writes all ask it."""
    from viz_transformer.analysis import why, writes

    cap = wt.capture(model, TEXT, "cross")  # 3 query (output) tokens here, 4 key tokens
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    with pytest.raises(ValueError, match=r"^layer 2 does not exist: choose 0 to 1\.$"):
        wt.explain(cap, 2, 0, 0)
    with pytest.raises(ValueError, match=r"^head -1 does not exist: choose 0 to 1\.$"):
        writes.head_output(cap, 0, -1, 0)
    with pytest.raises(ValueError, match=f"^position {n_q} does not exist: choose 0 to {n_q - 1}"):
        wt.explain(cap, 0, 0, n_q)
    with pytest.raises(ValueError, match=f"^key {n_k} does not exist: choose 0 to {n_k - 1}"):
        why.split_score(cap, 0, 0, 0, n_k, "dimension")
    cap.check(1, 1, query=n_q - 1, key=n_k - 1)  # the last of each exists
