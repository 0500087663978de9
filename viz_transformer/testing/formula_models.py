"""Tiny Hugging Face models whose attention is more than ``softmax(q k^T * scale)``, built offline
from a config and saved as folders that load as ``hf:<folder>``: soft-capping and sliding windows
(Gemma 2), a sliding window (Mistral), attention sinks and windows (gpt-oss), one attention module
run in every layer (ALBERT), two attention calls per layer (DiffLlama) and a local bidirectional
window (ModernBERT). Windows are shorter than the tests' inputs, so a window that were ignored
would show. T5's relative bias is ``testing.hf``'s ``t5``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from transformers import (
    AlbertConfig,
    AlbertModel,
    DiffLlamaConfig,
    DiffLlamaForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    ModernBertConfig,
    ModernBertModel,
)

from viz_transformer.testing.hf import save_seeded
from viz_transformer.testing.hf_tokenizers import LINE_WORDS, llama_tokenizer, wordpiece

POSITIONS = 1024  # inputs up to this many tokens (the memory tests read a few hundred)
WINDOW = 3  # keys a sliding window holds: shorter than every test input
DECODER = {  # sizes every tiny decoder shares
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": POSITIONS,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def _decoder(path: Path, config: type, model: type, **extra: object) -> Path:
    tok = llama_tokenizer()
    cfg = config(vocab_size=len(tok), **DECODER, **extra)
    return save_seeded(path, tok, lambda: model(cfg))


def gemma2(path: Path) -> Path:
    """Soft-capped scores (``softcap`` 2, so that it bites) and a window every other layer."""
    return _decoder(
        path,
        Gemma2Config,
        Gemma2ForCausalLM,
        head_dim=8,
        sliding_window=WINDOW,
        attn_logit_softcapping=2.0,
        query_pre_attn_scalar=8,
        final_logit_softcapping=None,
    )


def mistral(path: Path) -> Path:
    """A sliding window in every layer."""
    return _decoder(path, MistralConfig, MistralForCausalLM, head_dim=8, sliding_window=WINDOW)


def gpt_oss(path: Path) -> Path:
    """A learned sink logit per head in every layer, a window every other layer, experts."""
    return _decoder(
        path,
        GptOssConfig,
        GptOssForCausalLM,
        head_dim=8,
        sliding_window=WINDOW,
        num_local_experts=2,
        num_experts_per_tok=1,
        layer_types=["sliding_attention", "full_attention"],
    )


def diffllama(path: Path) -> Path:
    """Differential attention: each layer calls attention twice on the same queries and keys."""
    return _decoder(path, DiffLlamaConfig, DiffLlamaForCausalLM)


def _encoder(path: Path, build: Callable[[int], torch.nn.Module]) -> Path:
    tok, tokens = wordpiece(LINE_WORDS)
    return save_seeded(path, tok, lambda: build(len(set(tokens))))


def albert(path: Path) -> Path:
    """One attention module (and layer) shared by both layers."""
    return _encoder(
        path,
        lambda vocab: AlbertModel(
            AlbertConfig(
                vocab_size=vocab,
                embedding_size=16,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                intermediate_size=64,
                max_position_embeddings=POSITIONS,
            )
        ),
    )


def modernbert(path: Path) -> Path:
    """A bidirectional local window (``local_attention`` 4: two keys each side) in layer 0,
    global attention in layer 1."""
    return _encoder(
        path,
        lambda vocab: ModernBertModel(
            ModernBertConfig(
                vocab_size=vocab,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                local_attention=4,
                global_attn_every_n_layers=2,
                max_position_embeddings=POSITIONS,
                pad_token_id=0,
                bos_token_id=2,
                eos_token_id=3,
                cls_token_id=2,
                sep_token_id=3,
            )
        ),
    )


# family -> builder: ``FORMULA_BUILDERS[family](folder)`` saves it and returns ``folder``
FORMULA_BUILDERS: dict[str, Callable[[Path], Path]] = {
    "gemma2": gemma2,
    "mistral": mistral,
    "gpt_oss": gpt_oss,
    "albert": albert,
    "diffllama": diffllama,
    "modernbert": modernbert,
}
