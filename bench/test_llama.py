"""bench/llama.py on a CPU: the published Llama-3-8B shape, the tiny model of the same shape
loaded through ``hf:<folder>`` in bfloat16, and one benchmark row of it."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import viz_transformer as vt
from bench.llama import LLAMA_3_8B, LLAMA_COLUMNS, build_llama, length_row, word_tokenizer


def test_the_8b_configuration_has_the_published_size():
    with torch.device("meta"):  # no memory: only the shapes
        model = LlamaForCausalLM(LlamaConfig(**LLAMA_3_8B, tie_word_embeddings=False))
    assert sum(p.numel() for p in model.parameters()) == 8_030_261_248  # Meta-Llama-3-8B
    attn = model.model.layers[0].self_attn
    assert (attn.q_proj.out_features, attn.k_proj.out_features) == (4096, 1024)  # 32 q, 8 kv


def test_a_text_of_n_words_is_n_tokens_after_the_start_marker():
    tok = word_tokenizer(64)
    ids = tok("the cat sat")["input_ids"]
    assert len(ids) == 4 and ids[0] == tok.bos_token_id and tok.unk_token_id not in ids


def test_the_tiny_llama_loads_in_bfloat16_and_gives_one_full_row(tmp_path):
    path = build_llama(tmp_path / "tiny", "tiny", positions=128)
    model = vt.load_model(f"hf:{path}", "cpu", "bfloat16")
    assert model.module.dtype == torch.bfloat16
    assert model.facts.shape("decoder") == (2, 8) and model.module.config.num_key_value_heads == 2
    row = length_row(model, 96, "cpu")
    assert len(row) == len(LLAMA_COLUMNS) and row[0] == 96
    first, overview, splits, writes, peak = row[1:]
    assert all(float(cell) >= 0 for cell in (first, overview, writes))  # seconds, 2 decimals
    assert "dimension 0." in splits and "input n/a" in splits and "component 0." in splits
    assert peak.endswith("(RSS)")
