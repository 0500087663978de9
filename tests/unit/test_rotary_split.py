"""The score split by rotary frequency (``vt.score_parts(..., by="dimension")`` on a RoPE model),
in the unit tier, against transformers' own rotation of the tiny Llama's queries and keys: pair
i is dimensions i and i + d_k/2 (Llama's half-split layout, ``rotate_half``), taken after the
rotation, times the model's scaling, and query head h reads key head h // (heads / kv heads)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import viz_transformer as vt
from viz_transformer.testing.hf import BUILDERS

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    return vt.load_model(f"hf:{BUILDERS['llama'](tmp_path_factory.mktemp('rotary'))}")


def rotated(model: vt.LoadedModel, layer: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Layer ``layer``'s queries ``(H, T, d_k)`` and keys ``(H_kv, T, d_k)`` after RoPE, from
    forward hooks on its projections and transformers' ``apply_rotary_pos_emb``."""
    module = model.module
    attn = module.model.layers[layer].self_attn
    kept = {}
    handles = [
        getattr(attn, name).register_forward_hook(lambda m, i, o, n=name: kept.update({n: o}))
        for name in ("q_proj", "k_proj")
    ]
    ids = torch.tensor([model.encode_text(TEXT)], device=model.device)
    try:
        with torch.no_grad():
            module(input_ids=ids)
            positions = torch.arange(ids.shape[1], device=model.device)[None]
            cos, sin = module.model.rotary_emb(kept["q_proj"], positions)
    finally:
        for handle in handles:
            handle.remove()
    d_k = attn.head_dim
    q = kept["q_proj"].view(1, ids.shape[1], -1, d_k).transpose(1, 2)  # (1, H, T, d_k)
    k = kept["k_proj"].view(1, ids.shape[1], -1, d_k).transpose(1, 2)  # (1, H_kv, T, d_k)
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q[0].double().cpu().numpy(), k[0].double().cpu().numpy(), float(attn.scaling)


@pytest.mark.parametrize(("layer", "head", "query", "key"), [(1, 3, 4, 2), (0, 0, 5, 5)])
def test_each_pair_is_its_two_rotated_dimensions_times_the_scaling(llama, layer, head, query, key):
    q, k, scaling = rotated(llama, layer)
    kv = head // (q.shape[0] // k.shape[0])  # 4 query heads share 2 key/value heads
    assert (layer, head) != (1, 3) or kv == 1
    terms = q[head, query] * k[kv, key]  # (d_k,)
    half = len(terms) // 2
    parts = vt.score_parts(llama, TEXT, "decoder", layer, head, query, key, by="dimension")
    assert parts["part"].tolist() == [f"f{i}" for i in range(half)] + ["rest"]
    pairs = (terms[:half] + terms[half:]) * scaling
    np.testing.assert_allclose(parts["value"][:-1], pairs, rtol=1e-5, atol=1e-7)
    assert abs(parts["value"].iloc[-1]) < 1e-6  # nothing left beside the pairs
    np.testing.assert_allclose(parts["value"].sum(), terms.sum() * scaling, rtol=1e-5)
