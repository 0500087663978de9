"""``LoadedModel.architecture``: every field checked against the config and modules it is read
from, for the paper's model, Bergamot, tiny random Llama (GQA), GPT-2 and BERT, and SmolLM2."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.architecture import entry_order, first_block
from viz_transformer.records.architecture import PARTS


def _numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # shared tensors once


def test_paper_model_matches_its_config() -> None:
    m = vt.load_model("paper-en-pt")
    cfg, s = m.module.cfg, m.architecture()
    assert s.architecture == "encoder-decoder"
    assert s.layers == {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers}
    assert (s.d_model, s.vocab, s.d_ff, s.heads, s.kv_heads) == (
        cfg.d_model, cfg.vocab_size, cfg.d_ff, cfg.n_heads, cfg.n_heads
    )  # fmt: skip
    assert s.d_head == cfg.d_k and s.attention == "MHA"
    assert s.norm_placement == "post" and s.norm_type == "LayerNorm"
    assert (s.block, s.block_norms, s.outside_norms) == (
        "decoder.layers.0", ("norm_1", "norm_2", "norm_3"), ()
    )  # fmt: skip
    per_token = 2 * cfg.n_decoder_layers * cfg.n_heads * cfg.d_k * 4  # K and V, float32
    assert s.kv_bytes_per_token == s.mha_kv_bytes_per_token == per_token
    assert not s.ffn_gated and s.ffn_name == "ReLU FFN" and s.tied_embeddings
    assert s.context_length == cfg.max_len and "sinusoid" in s.positions
    assert tuple(s.parameters) == PARTS and sum(s.parameters.values()) == _numel(m.module)
    ffn = sum(_numel(layer.ffn) for stack in (m.module.encoder, m.module.decoder)
              for layer in stack.layers)  # fmt: skip
    assert s.parameters["feed-forward"] == ffn
    assert s.parameters["output"] == cfg.vocab_size * cfg.output_bias  # the logits' bias
    assert s.rows()["Tied embeddings"].startswith("yes")


@pytest.mark.needs("bergamot")
def test_bergamot_has_no_self_attention_cache() -> None:
    m = vt.load_model("bergamot-en-pt")
    s = m.architecture()
    assert s.layers == {"encoder": 6, "decoder": 2} and s.kv_bytes_per_token is None
    assert s.norm_placement == "post" and s.d_ff == m.module.cfg.d_ff
    ssru = sum(_numel(layer.ssru) for layer in m.module.decoder.layers)
    assert s.parameters["other"] == ssru + m.module.logit_bias.numel()  # recurrent unit, bias
    assert ssru > 0
    assert "no self-attention K/V cache" in s.rows()["KV cache per token"]


def test_tiny_llama_gqa_prenorm_swiglu(load_tiny: Callable[[str], vt.LoadedModel]) -> None:
    m = load_tiny("llama")
    cfg, s = m.module.config, m.architecture()
    assert s.architecture == "decoder-only" and s.layers == {"decoder": cfg.num_hidden_layers}
    assert (s.heads, s.kv_heads, s.d_head) == (
        cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    )  # fmt: skip
    assert s.attention == "GQA"
    per_head = 2 * cfg.num_hidden_layers * cfg.head_dim * 4  # K and V, float32
    assert s.kv_bytes_per_token == per_head * cfg.num_key_value_heads
    assert s.mha_kv_bytes_per_token == per_head * cfg.num_attention_heads
    assert "GQA saves 2x" in s.rows()["KV cache per token"]
    assert (s.norm_placement, s.norm_type) == ("pre", "LlamaRMSNorm")
    assert s.block_norms == ("input_layernorm", "post_attention_layernorm")
    assert s.outside_norms == ("model.norm",)
    assert s.ffn_gated and s.ffn_name == "SwiGLU" and s.d_ff == cfg.intermediate_size
    assert s.tied_embeddings is False and s.context_length == cfg.max_position_embeddings
    assert f"θ = {cfg.rope_parameters['rope_theta']:g}" in s.positions
    attn = sum(_numel(layer.self_attn) for layer in m.module.model.layers)
    assert s.parameters["attention"] == attn
    assert s.parameters["output"] == _numel(m.module.lm_head)
    assert sum(s.parameters.values()) == _numel(m.module)


def test_tiny_gpt2_bert_t5(load_tiny: Callable[[str], vt.LoadedModel]) -> None:
    gpt2 = load_tiny("gpt2").architecture()
    assert (gpt2.norm_placement, gpt2.block_norms, gpt2.outside_norms) == (
        "pre", ("ln_1", "ln_2"), ("transformer.ln_f",)
    )  # fmt: skip
    assert gpt2.tied_embeddings and not gpt2.ffn_gated and gpt2.d_ff == 4 * gpt2.d_model
    assert "learned table of 64 positions" in gpt2.positions
    bert = load_tiny("bert").architecture()
    assert bert.architecture == "encoder-only" and bert.layers == {"encoder": 2}
    assert bert.norm_placement == "post" and bert.kv_bytes_per_token is None
    assert bert.block_norms == ("attention.output.LayerNorm", "output.LayerNorm")
    assert bert.tied_embeddings is None and bert.d_ff == 32
    t5 = load_tiny("t5").architecture()  # the norm sits inside T5's sub-layer wrappers
    assert (t5.norm_placement, t5.norm_type, t5.context_length) == ("pre", "T5LayerNorm", None)


def test_entry_order_leaves_no_hook(tiny) -> None:
    _, block = first_block(tiny.module)
    with entry_order(block) as order:
        tiny.trace(tiny.spec.example)
    assert order[0].startswith("self_attn.") and "norm_1" in order
    assert not any(m._forward_pre_hooks or m._forward_hooks for m in block.modules())


@pytest.mark.slow
def test_smollm2_summary(smollm2_model: vt.LoadedModel) -> None:
    cfg, s = smollm2_model.module.config, smollm2_model.architecture()
    assert s.layers == {"decoder": 30} and (s.heads, s.kv_heads, s.d_head) == (9, 3, 64)
    assert (s.kv_bytes_per_token, s.mha_kv_bytes_per_token) == (46_080, 138_240)
    assert s.ffn_name == "SwiGLU" and s.d_ff == cfg.intermediate_size == 1536
    assert s.norm_placement == "pre" and s.tied_embeddings
    assert s.context_length == 8192 and "θ = 100000" in s.positions
    assert sum(s.parameters.values()) == _numel(smollm2_model.module) == 134_515_008
