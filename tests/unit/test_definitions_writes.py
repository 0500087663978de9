"""What a head writes (``writes.head_writes`` / ``writes_of``) against direct logit attribution
computed here by hand: the head's output (its slice of the output projection's input, through
that projection, read by a PyTorch forward hook) through the final norm with its scale held at
the value it has on the final stream the model computed, times the gain, times the unembedding
matrix; for a post-norm model, the output layer's matrix alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import writes
from viz_transformer.records.kinds import head_label
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.projections import output_projections, per_head

HF_TEXT = "the cat sat on the mat"
PAPER_TEXT = "alpha beta gamma delta"


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, vt.LoadedModel]:
    root: Path = tmp_path_factory.mktemp("writes")
    torch.manual_seed(0)
    models = {f: vt.load_model(f"hf:{BUILDERS[f](root / f)}") for f in ("llama", "gpt2")}
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():  # final norm gains and biases away from 1 and 0: none can be left out
        for norm in (models["llama"].module.model.norm, models["gpt2"].module.transformer.ln_f):
            for p in norm.parameters():
                noise = torch.randn(p.shape, generator=generator, device="cpu") * 0.3
                p.add_(noise.to(p.device))
    return models


def hand_logits(
    model: vt.LoadedModel, family: str, out: np.ndarray, stream: np.ndarray
) -> np.ndarray:
    """``(vocab,)``: ``out`` through the final norm with the scale it has on ``stream``."""
    net = model.module
    if family == "llama":
        norm, unembed = net.model.norm, net.lm_head.weight
        eps = norm.variance_epsilon
        normed = out / np.sqrt(np.mean(stream**2) + eps)
    else:
        norm, unembed = net.transformer.ln_f, net.lm_head.weight
        eps = norm.eps
        normed = (out - out.mean()) / np.sqrt(stream.var() + eps)
    gain = norm.weight.detach().double().cpu().numpy()
    return unembed.detach().double().cpu().numpy() @ (normed * gain)


def last_block_output(model: vt.LoadedModel, family: str, text: str) -> np.ndarray:
    """``[T, d]`` what the last block wrote, read by a forward hook on that block."""
    net = model.module
    block = net.model.layers[-1] if family == "llama" else net.transformer.h[-1]
    kept = {}
    handle = block.register_forward_hook(lambda _m, _a, output: kept.setdefault("x", output))
    try:
        with torch.no_grad():
            net(input_ids=torch.tensor([model.encode_text(text)], device=model.device))
    finally:
        handle.remove()
    x = kept["x"][0] if isinstance(kept["x"], tuple) else kept["x"]
    return x[0].double().cpu().numpy()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_a_heads_writes_are_its_output_through_the_held_final_norm(hf_models, family, captured):
    model = hf_models[family]
    cap, kept = captured(model, HF_TEXT, "decoder")
    stream = last_block_output(model, family, HF_TEXT)
    np.testing.assert_allclose(cap.final, stream, atol=1e-5)
    projs = output_projections(model, "decoder")
    n = len(cap.query_tokens)
    for layer, head, position in [(0, 1, n - 1), (1, 0, 2), (cap.n_layers - 1, cap.n_heads - 1, 0)]:
        out = per_head(projs[layer], kept[layer]["in"], cap.n_heads)[head, position]
        want = hand_logits(model, family, out, stream[position])
        got = writes.writes_of(model, cap, layer, head, position, k=3)
        assert got.exact and got.token == cap.query_tokens[position]
        order = np.argsort(want)
        assert got.promoted["id"].tolist() == order[::-1][:3].tolist()
        assert got.suppressed["id"].tolist() == order[:3].tolist()
        np.testing.assert_allclose(
            got.promoted["logit"], want[order[::-1][:3]], rtol=1e-4, atol=1e-6
        )
        np.testing.assert_allclose(got.suppressed["logit"], want[order[:3]], rtol=1e-4, atol=1e-6)
        assert got.promoted["token"].tolist() == list(model.output_tokens(order[::-1][:3].tolist()))


def test_logit_parts_name_each_head_with_its_own_logits(hf_models, captured):
    model = hf_models["gpt2"]
    cap, kept = captured(model, HF_TEXT, "decoder")
    stream = last_block_output(model, "gpt2", HF_TEXT)
    projs = output_projections(model, "decoder")
    position = 3
    names, logits, bias = writes.logit_parts(model, cap, position)
    for layer in range(cap.n_layers):
        heads = per_head(projs[layer], kept[layer]["in"], cap.n_heads)[:, position]
        for head in range(cap.n_heads):
            want = hand_logits(model, "gpt2", heads[head], stream[position])
            np.testing.assert_allclose(
                logits[names.index(head_label((layer, head)))], want, atol=1e-4
            )
    norm, unembed = model.module.transformer.ln_f, model.module.lm_head.weight
    want_bias = unembed.detach().double().cpu().numpy() @ norm.bias.detach().double().cpu().numpy()
    np.testing.assert_allclose(bias, want_bias, atol=1e-5)


@pytest.mark.parametrize("kind", ["decoder", "cross"])
def test_a_post_norm_heads_writes_are_its_output_through_the_output_layer(kind, captured):
    model = tiny_paper_model()
    cap, kept = captured(model, PAPER_TEXT, kind)
    projs = output_projections(model, kind)
    generator = model.module.generator.weight.detach().double().cpu().numpy()
    for layer, head, position in [(0, 1, 1), (1, 0, len(cap.query_tokens) - 1)]:
        out = per_head(projs[layer], kept[layer]["in"], cap.n_heads)[head, position]
        want = generator @ out
        got = writes.head_writes(model, PAPER_TEXT, kind, layer, head, position, k=2)
        assert not got.exact and got.note == writes.POST_NORM_NOTE
        order = np.argsort(want)
        assert got.promoted["id"].tolist() == order[::-1][:2].tolist()
        assert got.suppressed["id"].tolist() == order[:2].tolist()
        np.testing.assert_allclose(got.suppressed["logit"], want[order[:2]], rtol=1e-4, atol=1e-6)


def test_k_is_capped_at_half_the_vocabulary():
    model = tiny_paper_model()
    vocab = model.module.generator.weight.shape[0]
    got = writes.head_writes(model, PAPER_TEXT, "cross", 0, 0, 1, k=100)
    assert len(got.promoted) == len(got.suppressed) == vocab // 2
    assert len(writes.head_writes(model, PAPER_TEXT, "cross", 0, 0, 1, k=0).promoted) == 1
    assert not set(got.promoted["id"]) & set(got.suppressed["id"])
