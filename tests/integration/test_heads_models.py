"""What heads do, on shipped and tiny Hugging Face models: the measured redundancy of
``paper-reverse``'s cross-attention heads, value-weighted maps against transformers' own
outputs, and ablation on Bergamot."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.random_init.hf import TEXT
from viz_transformer.training.tasks import TASKS, pairs


@pytest.fixture(scope="module")
def reverse():
    model = vt.load_model("paper-reverse")
    data = pairs(TASKS["reverse"], 40, seed=20261121, split="held_out")

    def correct(heads: list[tuple[str, int, int]]) -> int:
        return sum(vt.trace(model, src, ablate=heads).output_text == tgt for src, tgt in data)

    return correct


@pytest.mark.slow
def test_paper_reverse_layer_1_cross_heads_are_redundant(reverse):
    """Measured (bench/bench_heads.py prints the same table): one or two of decoder layer 1's
    four cross heads ablated leave reversal intact on 40 held-out inputs, three nearly so, all
    four break it; layer 0's four together cost most inputs."""
    assert reverse([]) == 40
    for r in (1, 2):
        for heads in itertools.combinations(range(4), r):
            assert reverse([("cross", 1, h) for h in heads]) == 40, heads
    threes = [reverse([("cross", 1, h) for h in hs]) for hs in itertools.combinations(range(4), 3)]
    assert threes == [39, 39, 40, 40]
    assert reverse([("cross", 1, h) for h in range(4)]) == 0
    assert reverse([("cross", 0, h) for h in range(4)]) == 15


def test_single_head_importance_does_not_pretend_one_head_is_decisive():
    model = vt.load_model("paper-reverse")
    imp = vt.head_importance(model, "happy king red ship", "cross")
    assert imp.shape == (2, 4) and np.abs(imp).max() < 0.1  # each alone costs almost nothing
    restored = vt.patch_set(
        model, "happy king red ship", "happy king blue ship", "cross", [(1, h) for h in range(4)]
    )
    assert 0.99 < restored < 1.0  # layer 1's cross heads carry the source together (0.997)


@pytest.mark.parametrize("family", ["llama", "bart"])
def test_value_weighted_matches_transformers_outputs(load_tiny, family):
    model = load_tiny(family)
    kind = model.spec.shows[-1]
    layers, heads = model.attention_shape(kind)
    got = vt.value_weighted(model, TEXT, kind)
    # an independent eager copy: transformers' own weights and output_attentions
    ref = type(model.module).from_pretrained(model.spec.path, attn_implementation="eager").eval()
    modules = [ref.get_submodule(n.removesuffix(".hook_pattern")) for n in model.names[kind]]
    values: list[torch.Tensor] = []
    handles = [
        m.v_proj.register_forward_hook(lambda _m, _i, out: values.append(out)) for m in modules
    ]
    ids = torch.tensor([model.encode_text(TEXT)])
    try:
        with torch.no_grad():
            if kind == "cross":
                out_ids = model.reference_ids(TEXT)
                start = model.module.config.decoder_start_token_id
                dec = torch.tensor([[start, *out_ids]])
                out = ref(input_ids=ids, decoder_input_ids=dec, output_attentions=True)
                patterns = out.cross_attentions
            else:
                out = ref(input_ids=ids, output_attentions=True)
                patterns = out.attentions
    finally:
        for h in handles:
            h.remove()
    if kind == "cross":
        values = values[-layers:]  # BART's cross keys/values are projected per layer, in order
    for layer, (mod, pattern, v) in enumerate(zip(modules, patterns, values, strict=True)):
        d_k = mod.head_dim
        v = v[0].view(v.shape[1], -1, d_k).transpose(0, 1)  # (h_kv, k, d_k)
        v = v.repeat_interleave(heads // v.shape[0], dim=0)  # grouped-query heads share values
        proj = getattr(mod, "o_proj", None) or mod.out_proj
        w_o = proj.weight.T.reshape(heads, d_k, -1)  # (h, d_k, d)
        norms = torch.einsum("hkd,hde->hke", v, w_o).norm(dim=-1)  # (h, k)
        want = (pattern[0] * norms[:, None, :]).detach().numpy()
        np.testing.assert_allclose(got[layer], want, atol=1e-5)


def test_bergamot_ablation_changes_the_translation_and_importance_is_batched():
    model = vt.load_model("bergamot-en-pt")
    text = "I am a student."
    plain = vt.trace(model, text)
    layer_1 = [("cross", 1, h) for h in range(8)] + [("cross", 0, h) for h in range(8)]
    assert vt.trace(model, text, ablate=layer_1).output_text != plain.output_text
    imp = vt.head_importance(model, text, "encoder")
    assert imp.shape == (6, 8) and np.isfinite(imp).all()
    with pytest.raises(ValueError, match="has no 'decoder' attention heads"):
        vt.head_importance(model, text, "decoder")
