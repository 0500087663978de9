"""The Q, K, V walkthrough recomputes every step, and each step equals what the model computed.

References are captured independently of ``walkthrough.capture``: ``PaperModel.run_with_cache``
for paper models, ``hooks.collect`` around Bergamot's own encode/decode, ``vt.trace`` for the
weights, and the attention modules called directly for the W^O output.
"""

from __future__ import annotations

import dataclasses
import json
import math
from functools import cache

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.figures import qkv
from viz_transformer.models import own_qkv
from viz_transformer.models.base import LoadedModel
from viz_transformer.networks.hooks import collect
from viz_transformer.networks.paper import subsequent_mask
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model

TINY_TEXT = "alpha beta gamma delta"
FLOAT32 = {"atol": 2e-5, "rtol": 1e-4}  # the model computes in float32, the walkthrough float64
PAIRS = [(m, k) for m in ("tiny", "paper-sov") for k in ("encoder", "decoder", "cross")]
BERGAMOT = [("bergamot-en-pt", "encoder"), ("bergamot-en-pt", "cross")]


@cache
def model_named(name: str) -> LoadedModel:
    return tiny_paper_model() if name == "tiny" else vt.load_model(name)


def text_of(model: LoadedModel) -> str:
    """The input walked through: short, since every step of every head at every position is
    checked (Bergamot's 14-token example took most of the unit tier's time for this file)."""
    if model.name == "tiny":
        return TINY_TEXT
    return "I am a student." if model.spec.family == "bergamot" else model.spec.example


def reference(model: LoadedModel, kind: str, trace: vt.Trace) -> dict[str, np.ndarray]:
    """Per layer: q, k, v, scores, z as the model computed them, and the attention module's output
    run directly on the layer's captured input, all ``[L, ...]``."""
    module, attn = model.module, {"encoder": "encoder.layers.{}.self_attn"}
    attn |= {"decoder": "decoder.layers.{}.self_attn", "cross": "decoder.layers.{}.cross_attn"}
    stream = "hook_resid_mid" if kind == "cross" else "hook_resid_pre"
    side = "encoder" if kind == "encoder" else "decoder"
    n, last = len(getattr(module, side).layers), len(module.encoder.layers) - 1
    names = [f"encoder.layers.{last}.hook_resid_post"]
    for i in range(n):
        names += [f"{side}.layers.{i}.{stream}"]
        names += [f"{attn[kind].format(i)}.hook_{c}" for c in ("q", "k", "v", "scores", "z")]
    if model.spec.family == "paper":
        index = model.vocab.index
        src = [index[t] for t in trace.src_tokens]
        _, got = model.run_with_cache(src, [index[t] for t in trace.tgt_tokens], names)
    else:
        eos = module.cfg.eos_id
        out = [i for i in model.output_ids(text_of(model)) if i != eos]
        with torch.no_grad(), collect(module, names) as got:
            src = torch.tensor([model.encode_text(text_of(model))], device=model.device)
            module.decode(module.encode(src), torch.tensor([out], device=model.device))
    ref = {c: np.stack([got[f"{attn[kind].format(i)}.hook_{c}"] for i in range(n)]) for c in "qkvz"}
    ref["scores"] = np.stack([got[f"{attn[kind].format(i)}.hook_scores"] for i in range(n)])
    outs = []
    for i in range(n):
        x_q = torch.from_numpy(got[f"{side}.layers.{i}.{stream}"])[None].to(model.device)
        x_kv = torch.from_numpy(got[names[0]])[None].to(model.device) if kind == "cross" else x_q
        mod = own_qkv.attention_module(model.module, kind, i)
        with torch.no_grad():
            if model.spec.family == "paper":
                mask = subsequent_mask(x_q.shape[1], model.device)[None, None]
                out = mod(x_q, x_kv, mask if kind == "decoder" else None)[0]
            else:
                out = mod(x_q, *mod.project_kv(x_kv))[0]
        outs.append(out.cpu().numpy())
    ref["out"] = np.stack(outs)
    return ref


def check_every_step(model: LoadedModel, kind: str) -> None:
    text = text_of(model)
    trace = vt.trace(model, text)
    cap = wt.capture(model, text, kind)
    ref = reference(model, kind, trace)
    weights = trace.get(kind)
    assert (cap.query_tokens, cap.key_tokens) == trace.tokens_for(kind)
    L, H, Tq, _ = weights.shape
    assert (cap.n_layers, cap.n_heads, len(cap.query_tokens)) == (L, H, Tq)
    root = math.sqrt(cap.d_k)
    steps = [wt.explain(cap, layer, head, pos) for layer, head, pos in np.ndindex(L, H, Tq)]

    def every(field: str) -> np.ndarray:
        """``field`` of every (layer, head, position)'s walkthrough, ``[L, H, Tq, ...]``."""
        values = np.stack([getattr(w, field) for w in steps])
        return values.reshape(L, H, Tq, *values.shape[1:])

    keep = every("keep")
    # step 2: projections from the layer input and the weights
    np.testing.assert_allclose(every("q"), ref["q"], atol=1e-4, rtol=1e-5)
    k, v = every("k"), every("v")  # each position sees every key and value of its head
    np.testing.assert_allclose(k, np.broadcast_to(ref["k"][:, :, None], k.shape), atol=1e-4,
                               rtol=1e-5)  # fmt: skip
    np.testing.assert_allclose(v, np.broadcast_to(ref["v"][:, :, None], v.shape), atol=1e-4,
                               rtol=1e-5)  # fmt: skip
    # steps 3 and 4 against the captured (scaled, masked) scores
    scores, raw, scaled = ref["scores"], every("raw"), every("scaled")
    assert np.isneginf(scores[~keep]).all() and np.isneginf(scaled[~keep]).all()
    np.testing.assert_allclose(raw[keep], scores[keep] * root, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(scaled[keep], scores[keep], rtol=1e-5, atol=1e-4)
    # step 5: the trace's weights, masked ones exactly 0
    w = every("weights")
    np.testing.assert_allclose(w, np.asarray(weights), atol=1e-5)
    assert (w[~keep] == 0).all()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=0, atol=1e-12)
    # step 6, the concatenation, and W^O against the module run on the same input
    np.testing.assert_allclose(every("z"), ref["z"], **FLOAT32)
    z_all = ref["z"].transpose(0, 2, 1, 3).reshape(L, 1, Tq, -1)  # the heads side by side
    concat = every("concat")
    np.testing.assert_allclose(concat, np.broadcast_to(z_all, concat.shape), **FLOAT32)
    out = every("out")
    np.testing.assert_allclose(out, np.broadcast_to(ref["out"][:, None], out.shape), atol=2e-4,
                               rtol=1e-4)  # fmt: skip


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_every_step_equals_the_paper_model(name, kind):
    check_every_step(model_named(name), kind)


@pytest.mark.needs("bergamot")
@pytest.mark.parametrize(("name", "kind"), BERGAMOT)
def test_every_step_equals_bergamot(name, kind):
    check_every_step(model_named(name), kind)


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_layer_zero_input_is_scaled_embedding_plus_sinusoid(kind):
    model = model_named("tiny")
    cap = wt.capture(model, TINY_TEXT, kind)
    table = model.position_table()
    embedding = (
        model.module.src_embed.weight.detach().cpu().numpy()
    )  # tied: one table for both sides
    index = model.vocab.index
    for pos, token in enumerate(cap.query_tokens):
        w = wt.explain(cap, 0, 0, pos)
        np.testing.assert_allclose(w.embed, embedding[index[token]] * math.sqrt(16), atol=1e-6)
        np.testing.assert_allclose(w.pos, table[pos], atol=1e-6)
        np.testing.assert_allclose(w.embed + w.pos, w.x, atol=1e-6)
    deeper = wt.explain(cap, 1, 0, 1)
    assert deeper.embed is None and deeper.pos is None


@pytest.mark.needs("bergamot")
def test_bergamot_layer_zero_uses_marian_positions():
    from viz_transformer.networks.marian import marian_positions

    model = model_named("bergamot-en-pt")
    cap = wt.capture(model, model.spec.example, "encoder")
    table = marian_positions(0, len(cap.query_tokens), 256, torch.device("cpu")).numpy()
    np.testing.assert_allclose(cap.pos, table, atol=1e-6)  # every position, not only the first
    w = wt.explain(cap, 0, 3, 2)
    np.testing.assert_allclose(w.embed + w.pos, w.x, atol=1e-5)
    cross = wt.explain(wt.capture(model, model.spec.example, "cross"), 0, 0, 1)
    assert cross.embed is None and cross.x.shape == (256,)


def test_decoder_masks_the_future_and_the_first_row_sees_only_itself():
    model = model_named("tiny")
    cap = wt.capture(model, TINY_TEXT, "decoder")
    first = wt.explain(cap, 0, 1, 0)
    assert first.keep.tolist() == [True] + [False] * (len(cap.key_tokens) - 1)
    assert first.weights[0] == pytest.approx(1.0)
    np.testing.assert_allclose(first.z, first.v[0], atol=1e-12)  # z is then v_0 itself


def test_forced_target_and_unscaled_scores():
    model = tiny_paper_model(seed=3, scale_scores=False)
    w = wt.walkthrough(model, TINY_TEXT, "cross", 1, 1, 2, target="beta alpha")
    assert w.query_tokens == ("<s>", "beta", "alpha") and not w.divided
    np.testing.assert_array_equal(w.raw, w.scaled)  # no 1/sqrt(d_k): the score is q.k itself
    trace = vt.trace(model, TINY_TEXT, target="beta alpha")
    np.testing.assert_allclose(w.weights, trace.cross[1, 1, 2], atol=1e-5)
    manual = np.exp(w.raw - w.raw.max()) / np.exp(w.raw - w.raw.max()).sum()
    np.testing.assert_allclose(w.weights, manual, atol=1e-12)


def test_downloads_hold_every_step_as_json():
    w = wt.walkthrough(model_named("tiny"), TINY_TEXT, "decoder", 0, 0, 1)
    arrays = w.arrays()
    assert set(arrays) >= {"x", "embed", "pos", "q", "k", "v", "raw", "scaled", "weights", "z"}
    assert {"concat", "out", "keep"} <= set(arrays)
    meta = json.loads(json.dumps(w.meta()))
    assert meta["query_token"] == w.query_tokens[1] and meta["d_k"] == 8


def test_models_and_inputs_it_cannot_walk_through_say_why(tmp_path):
    tiny = model_named("tiny")
    bart = vt.load_model(f"hf:{BUILDERS['bart'](tmp_path / 'bart')}")  # BERT, GPT-2: walked
    with pytest.raises(ValueError, match="Attention maps page"):
        wt.capture(bart, "the cat sat", "encoder")
    with pytest.raises(ValueError, match="'omega'"):
        wt.capture(tiny, "alpha omega", "encoder")
    with pytest.raises(ValueError, match="empty"):
        wt.capture(tiny, "  ", "encoder")
    with pytest.raises(ValueError, match="unknown attention kind"):
        wt.capture(tiny, TINY_TEXT, "self")
    cap = wt.capture(tiny, TINY_TEXT, "encoder")
    with pytest.raises(ValueError, match="head 2 does not exist: choose 0 to 1"):
        wt.explain(cap, 0, 2, 0)
    with pytest.raises(ValueError, match="position 5"):
        wt.explain(cap, 0, 0, 5)


@pytest.mark.needs("bergamot")
def test_bergamot_decoder_self_attention_is_explained_as_recurrent():
    with pytest.raises(ValueError, match="recurrent"):
        wt.capture(model_named("bergamot-en-pt"), "Hello.", "decoder")


def test_strips_number_their_cells_only_while_the_numbers_fit():
    model = model_named("tiny")
    w = wt.explain(wt.capture(model, text_of(model), "encoder"), 0, 0, 1)
    assert w.d_k <= qkv.MAX_TEXT_COLUMNS  # the tiny model's head is narrow: two decimals each
    for figure in (qkv.vectors_figure, qkv.weighted_sum_figure):
        assert {t.texttemplate for t in figure(w).data} == {"%{z:.2f}"}
    # a 32-wide head (paper-en-pt's, whose one-decimal numbers overlapped at 1024 px presenter)
    rng = np.random.default_rng(0)
    keys = (len(w.key_tokens), 32)
    wide = dataclasses.replace(
        w,
        q=rng.normal(size=32),
        k=rng.normal(size=keys),
        v=rng.normal(size=keys),
        z=rng.normal(size=32),
    )
    for figure in (qkv.vectors_figure, qkv.weighted_sum_figure):
        traces = figure(wide).data
        assert all(t.texttemplate is None and t.z.shape[1] == 32 for t in traces)
        assert all("%{z:.4f}" in t.hovertemplate for t in traces)  # the value stays in the hover
