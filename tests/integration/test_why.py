"""Why a head attends: the scores equal what the model computed (their softmax is the trace's
weights, and our own networks' ``hook_scores``), every split sums to the score, position.position
depends on the positions alone, and a pre-norm model's components read as logits sum to its final
logits (computed by the model's own forward pass, not our capture)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.analysis import why, writes
from viz_transformer.records.qkv import KindCapture
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model

PAPER_TEXT = "alpha beta gamma delta"
HF_TEXT = "the cat sat on the mat"
HF = ("llama", "gpt2", "bert")  # RoPE + GQA + RMSNorm; learned positions + LayerNorm; post-norm
KINDS = {"llama": "decoder", "gpt2": "decoder", "bert": "encoder"}


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, vt.LoadedModel]:
    root: Path = tmp_path_factory.mktemp("why")
    models = {f: vt.load_model(f"hf:{BUILDERS[f](root / f)}") for f in HF}
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # biases and norm gains away from 0 and 1, so none can be left out
        for name, p in models["gpt2"].module.named_parameters():
            if name.endswith("bias") or ".ln_" in name:
                noise = torch.randn(p.shape, generator=generator, device="cpu") * 0.3
                p.copy_(noise.to(p.device) + (1.0 if name.endswith("weight") else 0.0))
    return models


@pytest.fixture(scope="module")
def paper() -> vt.LoadedModel:
    return tiny_paper_model()


def softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def float64(cap: KindCapture, name: str, layer: int, head: int, position: int) -> np.ndarray:
    """One captured vector in float64: a reference sum computed in float32 loses the digits a
    near cancellation leaves (the splits are computed in float64)."""
    return cap.captured[name][layer, head, position].astype(np.float64)


def every_head(cap: KindCapture):
    return [(layer, head) for layer in range(cap.n_layers) for head in range(cap.n_heads)]


def check_scores(cap: KindCapture, weights: np.ndarray) -> None:
    for layer, head in every_head(cap):
        scores = why.head_scores(cap, layer, head)
        assert scores.dtype == np.float64
        np.testing.assert_allclose(softmax(scores), weights[layer, head], atol=1e-5)
        masked = np.isneginf(scores)
        causal = cap.kind == "decoder"
        expected = np.triu(np.ones_like(masked), 1) if causal else np.zeros_like(masked)
        np.testing.assert_array_equal(masked, expected)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_paper_scores_are_the_hook_scores_and_their_softmax_the_trace(paper, kind):
    trace = vt.trace(paper, PAPER_TEXT)
    cap = wt.capture(paper, PAPER_TEXT, kind)
    check_scores(cap, trace.get(kind))
    for layer, head in every_head(cap):  # hook_scores: scaled and masked inside the model
        np.testing.assert_allclose(
            why.head_scores(cap, layer, head), cap.captured["scores"][layer, head], atol=1e-5
        )
    direct = why.attention_scores(paper, PAPER_TEXT, kind, 1, 1)
    np.testing.assert_array_equal(direct, why.head_scores(cap, 1, 1))


@pytest.mark.needs("bergamot")
@pytest.mark.parametrize("kind", ["encoder", "cross"])
def test_bergamot_scores_and_splits(kind):
    model = vt.load_model("bergamot-en-pt")
    text = model.spec.example
    cap = wt.capture(model, text, kind)
    check_scores(cap, vt.trace(model, text).get(kind))
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    for layer, head in [(0, 3), (cap.n_layers - 1, 7)]:
        scores = why.head_scores(cap, layer, head)
        for by in splits_of(cap, layer):
            sums_to_score(why.split_score(cap, layer, head, n_q - 1, n_k - 2, by), scores[-1, -2])


def test_unscaled_model_scores_are_plain_dot_products():
    model = tiny_paper_model(seed=2, scale_scores=False)
    cap = wt.capture(model, PAPER_TEXT, "encoder")
    check_scores(cap, vt.trace(model, PAPER_TEXT).encoder)
    q, k = cap.captured["q"][0, 1], cap.captured["k"][0, 1]
    np.testing.assert_allclose(why.head_scores(cap, 0, 1), q @ k.T, rtol=1e-5)


@pytest.mark.parametrize("family", HF)
def test_hf_scores_softmax_is_the_trace(hf_models, family):
    model, kind = hf_models[family], KINDS[family]
    check_scores(wt.capture(model, HF_TEXT, kind), vt.trace(model, HF_TEXT).get(kind))


def sums_to_score(parts, score: float) -> None:
    assert parts["part"].iloc[-1] == "rest"
    assert float(parts["value"].sum()) == pytest.approx(score, rel=1e-4, abs=1e-5)
    assert abs(parts["value"].iloc[-1]) <= max(1e-5, 1e-4 * abs(score))  # every split is exact


def splits_of(cap: KindCapture, layer: int) -> list[str]:
    out = ["dimension"]
    if layer == 0 and cap.kind != "cross" and cap.rotary is None:
        out += ["input"] if cap.embed is not None or cap.inputs is not None else []
    return out + (["component"] if cap.resid is not None else [])


@pytest.mark.parametrize("case", ["encoder", "decoder", "cross", *HF])
def test_every_split_sums_to_the_score(paper, hf_models, case):
    model = hf_models.get(case, paper)
    text = PAPER_TEXT if model is paper else HF_TEXT
    cap = wt.capture(model, text, KINDS.get(case, case))
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    for layer, head in every_head(cap):
        scores = why.head_scores(cap, layer, head)
        for query, key in [(n_q - 1, 0), (n_q - 1, n_k - 1), (min(2, n_q - 1), 1)]:
            for by in splits_of(cap, layer):
                parts = why.split_score(cap, layer, head, query, key, by)
                sums_to_score(parts, scores[query, key])
    assert splits_of(cap, 0) == {
        "encoder": ["dimension", "input"], "decoder": ["dimension", "input"],
        "cross": ["dimension"], "llama": ["dimension", "component"],
        "gpt2": ["dimension", "input", "component"], "bert": ["dimension"],
    }[case]  # fmt: skip


def test_dimension_split_names_each_dimension_or_rotary_pair(paper, hf_models):
    cap = wt.capture(paper, PAPER_TEXT, "encoder")
    parts = why.split_score(cap, 1, 0, 2, 3, "dimension")
    assert parts["part"].tolist() == [f"d{i}" for i in range(cap.d_k)] + ["rest"]
    q, k = float64(cap, "q", 1, 0, 2), float64(cap, "k", 1, 0, 3)
    np.testing.assert_allclose(parts["value"][:-1], q * k / math.sqrt(cap.d_k), rtol=1e-6)
    llama = hf_models["llama"]
    cap = wt.capture(llama, HF_TEXT, "decoder")
    parts = why.split_score(cap, 1, 3, 4, 2, "dimension")
    half = cap.d_k // 2
    assert parts["part"].tolist() == [f"f{i}" for i in range(half)] + ["rest"]
    # pair i turns by base^(-2i/d_k) radians per position: a wavelength of 2 pi / that
    base = llama.module.config.rope_parameters["rope_theta"]
    expected = 2 * np.pi * base ** (2 * np.arange(half) / cap.d_k)
    np.testing.assert_allclose(parts["wavelength"][:-1], expected, rtol=1e-4)
    # head 3 shares key head 1 (4 query heads, 2 key/value heads)
    q, k = float64(cap, "q", 1, 3, 4), float64(cap, "k", 1, 1, 2)
    pairs = (q * k)[:half] + (q * k)[half:]  # a pair's two terms can nearly cancel
    np.testing.assert_allclose(parts["value"][:-1], pairs / math.sqrt(cap.d_k), rtol=1e-6)


def test_position_position_depends_on_the_positions_alone(paper):
    same = []
    for text in (PAPER_TEXT, "kappa iota theta eta"):
        cap = wt.capture(paper, text, "encoder")
        parts = why.split_score(cap, 0, 1, 3, 1, "input").set_index("part")["value"]
        assert {"content.content", "content.position", "position.content",
                "position.position", "bias.bias"} <= set(parts.index)  # fmt: skip
        same.append(parts)
    assert same[0]["position.position"] == pytest.approx(same[1]["position.position"], abs=1e-9)
    assert abs(same[0]["content.content"] - same[1]["content.content"]) > 1e-3


def test_component_pairs_and_marginals(hf_models):
    cap = wt.capture(hf_models["gpt2"], HF_TEXT, "decoder")
    parts = why.split_score(cap, 1, 0, 5, 2, "component")
    sides = ["embeddings", "L0 H0", "L0 H1", "L0 attention bias", "L0 MLP", "bias"]
    assert parts["part"].iloc[:-1].tolist() == [f"{a}.{b}" for a in sides for b in sides]
    query_side, key_side = why.marginals(parts)
    score = why.head_scores(cap, 1, 0)[5, 2]
    assert set(query_side.index) == set(sides) == set(key_side.index)
    assert query_side.sum() == pytest.approx(score, rel=1e-4, abs=1e-5)
    assert key_side.sum() == pytest.approx(score, rel=1e-4, abs=1e-5)
    names, comps = why.residual_components(cap, 1, [5])
    np.testing.assert_allclose(comps.sum(0)[0], cap.resid[1, 5], atol=1e-5)
    assert names == sides[:-1]


def test_splits_a_model_or_layer_lacks_say_why(paper, hf_models):
    enc = wt.capture(paper, PAPER_TEXT, "encoder")
    with pytest.raises(ValueError, match="post-norm"):
        why.split_score(enc, 1, 0, 1, 1, "component")
    with pytest.raises(ValueError, match="layer 1 the input is the residual stream"):
        why.split_score(enc, 1, 0, 1, 1, "input")
    with pytest.raises(ValueError, match="encoder's output"):
        why.split_score(wt.capture(paper, PAPER_TEXT, "cross"), 0, 0, 1, 1, "input")
    with pytest.raises(ValueError, match="RoPE"):
        why.split_score(wt.capture(hf_models["llama"], HF_TEXT, "decoder"), 0, 0, 1, 1, "input")
    with pytest.raises(ValueError, match="BERT"):
        why.split_score(wt.capture(hf_models["bert"], HF_TEXT, "encoder"), 0, 0, 1, 1, "input")
    dec = wt.capture(paper, PAPER_TEXT, "decoder")
    with pytest.raises(ValueError, match="masks it"):
        why.split_score(dec, 0, 0, 1, 2, "dimension")
    with pytest.raises(ValueError, match="head 2 does not exist"):
        why.split_score(dec, 0, 2, 1, 0, "dimension")
    with pytest.raises(ValueError, match="unknown split"):
        why.split_score(dec, 0, 0, 1, 0, "rows")


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_components_read_as_logits_sum_to_the_final_logits(hf_models, family):
    model = hf_models[family]
    cap = wt.capture(model, HF_TEXT, "decoder")
    ids = torch.tensor([model.encode_text(HF_TEXT)], device=model.device)
    with torch.no_grad():  # the model's own forward pass, nothing of the capture
        final = model.module(input_ids=ids).logits[0].double().cpu().numpy()
    for position in range(len(cap.query_tokens)):
        names, logits, bias = writes.logit_parts(model, cap, position)
        assert len(names) == 1 + cap.n_layers * (cap.n_heads + 1) + (family == "gpt2") * 2
        np.testing.assert_allclose(logits.sum(0) + bias, final[position], rtol=1e-3, atol=1e-4)


def test_head_writes_ranks_the_heads_own_logits(hf_models, paper):
    model = hf_models["gpt2"]
    cap = wt.capture(model, HF_TEXT, "decoder")
    got = writes.writes_of(model, cap, 1, 1, 3, k=4)
    names, logits, _ = writes.logit_parts(model, cap, 3)
    row = logits[names.index("L1 H1")]  # the same head read through the same held norm
    assert got.exact and got.promoted["id"].tolist() == np.argsort(row)[::-1][:4].tolist()
    assert got.suppressed["id"].tolist() == np.argsort(row)[:4].tolist()
    np.testing.assert_allclose(got.promoted["logit"], np.sort(row)[::-1][:4], rtol=1e-6)
    cross = writes.head_writes(paper, PAPER_TEXT, "cross", 1, 0, 1, k=3)
    assert not cross.exact and "Post-norm" in cross.note
    out = writes.head_output(wt.capture(paper, PAPER_TEXT, "cross"), 1, 0, 1)
    generator = paper.module.generator.weight.detach().cpu().double().numpy()
    np.testing.assert_allclose(cross.promoted["logit"].iloc[0], (generator @ out).max(), rtol=1e-5)
    with pytest.raises(ValueError, match="encoder head"):
        writes.head_writes(paper, PAPER_TEXT, "encoder", 0, 0, 1)
