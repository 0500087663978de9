"""bench/harness/llama.py on a CPU: the published Llama-3-8B shape, the tiny model of the same shape
loaded through ``hf:<folder>`` in bfloat16, and one benchmark row of it."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import viz_transformer as vt
from bench.harness.llama import LLAMA_3_8B, LLAMA_COLUMNS, build_llama, length_row, word_tokenizer


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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    path = build_llama(tmp_path_factory.mktemp("llama") / "tiny", "tiny", positions=128)
    return vt.load_model(f"hf:{path}", "cpu", "bfloat16")


def test_the_tiny_llama_loads_in_bfloat16_and_gives_one_full_row(tiny):
    assert tiny.module.dtype == torch.bfloat16
    assert tiny.facts.shape("decoder") == (2, 8) and tiny.module.config.num_key_value_heads == 2
    row = length_row(tiny, 96, "cpu")
    assert len(row) == len(LLAMA_COLUMNS) and row[0] == 96
    first, overview, window, splits, writes, peak = row[1:]
    assert all(float(cell) >= 0 for cell in (first, overview, window, writes))  # seconds
    assert "dimension 0." in splits and "input n/a" in splits and "component 0." in splits
    gib = float(peak.removesuffix(" GiB (RSS)"))  # the process's peak in the row: weights,
    assert 0.1 < gib < 4.0  # torch and Python (~0.3 GiB), not a quadratic array of 96 tokens


def test_a_failing_cell_names_its_exception_and_the_row_goes_on(tiny, monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB")

    real = vt.score_parts
    monkeypatch.setattr(vt, "head_writes", out_of_memory)
    monkeypatch.setattr(
        vt,
        "score_parts",
        lambda *a, by, **k: out_of_memory() if by == "component" else real(*a, by=by, **k),
    )
    row = length_row(tiny, 64, "cpu")
    assert len(row) == len(LLAMA_COLUMNS)
    assert row[-2] == "failed: OutOfMemoryError"  # what a head writes
    assert "component failed: OutOfMemoryError" in row[-3] and "dimension 0." in row[-3]
    assert float(row[1]) >= 0 and row[-1].endswith("(RSS)")  # the cells before still ran
