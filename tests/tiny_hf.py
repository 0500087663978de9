"""Tiny random Hugging Face models of six families with real tokenizers, built offline.

Shared by the Hugging Face integration tests and the app tests (which load one by path).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BartTokenizer,
    BertConfig,
    BertModel,
    BertTokenizer,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2Tokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    LlamaTokenizer,
    MarianConfig,
    MarianMTModel,
    MarianTokenizer,
    T5Config,
    T5ForConditionalGeneration,
    T5Tokenizer,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode

LINES = [
    "the cat sat on the mat",
    "the dog ran to the red house",
    "a small bird sings in the tree",
    "she reads the book and he writes a letter",
]
TEXT = "the cat ran to the tree"
TARGET = "a bird sat on the mat"
WORDS = sorted({w for line in LINES for w in line.split()})
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]

SHARPEN = ("embed", "shared", "wte", "wpe", "q_proj", "k_proj", "query", "key", "c_attn", ".q.",
           ".k.", "relative_attention_bias")  # fmt: skip


def _sharpen(model: torch.nn.Module) -> torch.nn.Module:
    """Embeddings, queries and keys drawn wide (the rest keeps its small init, so the residual
    stream does not collapse), so the maps are peaked: a mix-up of layers or heads would show."""
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(part in name for part in SHARPEN):
                p.normal_(0.0, 0.5)
    return model


def _byte_level_vocab(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2 style byte-level BPE: every byte symbol, plus a few merges that make Ġ-words."""
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "c"), ("a", "t"), ("Ġc", "at")]
    symbols = [*specials, *bytes_to_unicode().values(), *("".join(m) for m in merges)]
    return {s: i for i, s in enumerate(dict.fromkeys(symbols))}, merges


def _marian(path: Path) -> Path:
    path.mkdir(parents=True)
    sp_prefix = path / "sp"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(LINES * 4), model_prefix=str(sp_prefix), vocab_size=60,
        hard_vocab_limit=False, bos_id=-1, eos_id=-1, unk_id=0, minloglevel=2,
    )  # fmt: skip
    sp = spm.SentencePieceProcessor(model_file=f"{sp_prefix}.model")
    pieces = [sp.id_to_piece(i) for i in range(1, sp.get_piece_size())]
    vocab = {p: i for i, p in enumerate(["</s>", "<unk>", *pieces, "<pad>"])}
    (path / "vocab.json").write_text(json.dumps(vocab))
    tok = MarianTokenizer(f"{sp_prefix}.model", f"{sp_prefix}.model", str(path / "vocab.json"))
    pad = vocab["<pad>"]
    cfg = MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(vocab), d_model=16, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=pad,
        eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0,
    )  # fmt: skip
    return _save(path / "model", tok, MarianMTModel(cfg))


def _t5(path: Path) -> Path:
    pieces = ["<pad>", "</s>", "<unk>", "▁", *(f"▁{w}" for w in WORDS), *LETTERS]
    tok = T5Tokenizer(vocab=[(p, -float(i)) for i, p in enumerate(pieces)], extra_ids=0)
    cfg = T5Config(
        vocab_size=len(pieces), d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2,
        num_heads=2, relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0,
        eos_token_id=1,
    )  # fmt: skip
    return _save(path, tok, T5ForConditionalGeneration(cfg))


def _bart(path: Path) -> Path:
    vocab, merges = _byte_level_vocab(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok = BartTokenizer(vocab=vocab, merges=merges)
    cfg = BartConfig(
        vocab_size=len(vocab), d_model=16, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=32,
        decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2, forced_bos_token_id=0,
    )  # fmt: skip
    return _save(path, tok, BartForConditionalGeneration(cfg))


def _bert(path: Path) -> Path:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {
        t: i for i, t in enumerate([*specials, *WORDS, *LETTERS, *(f"##{c}" for c in LETTERS)])
    }
    tok = BertTokenizer(vocab=vocab)
    cfg = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    return _save(path, tok, BertModel(cfg))


def _gpt2(path: Path) -> Path:
    vocab, merges = _byte_level_vocab(["<|endoftext|>"])
    tok = GPT2Tokenizer(vocab=vocab, merges=merges)
    cfg = GPT2Config(
        vocab_size=len(vocab), n_embd=16, n_layer=2, n_head=2, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    return _save(path, tok, GPT2LMHeadModel(cfg))


def _llama(path: Path) -> Path:
    pieces = ["<unk>", "<s>", "</s>", "▁", *LETTERS, "▁t", "he", "▁the", "▁c", "at", "▁cat"]
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("▁", "c"), ("a", "t"), ("▁c", "at")]
    tok = LlamaTokenizer(
        vocab={p: i for i, p in enumerate(pieces)}, merges=merges, add_bos_token=True
    )
    cfg = LlamaConfig(
        vocab_size=len(pieces), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return _save(path, tok, LlamaForCausalLM(cfg))


def _save(path: Path, tokenizer: object, model: torch.nn.Module) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(path)
    _sharpen(model).save_pretrained(path)
    return path


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "marian": _marian, "t5": _t5, "bart": _bart, "bert": _bert, "gpt2": _gpt2, "llama": _llama,
}  # fmt: skip
ALL = ("encoder", "decoder", "cross")
SHOWS = {"marian": ALL, "t5": ALL, "bart": ALL, "bert": ("encoder",), "gpt2": ("decoder",),
         "llama": ("decoder",)}  # fmt: skip
POSITIONS = {"marian": "sinusoidal", "t5": "relative", "bart": "learned", "bert": "learned",
             "gpt2": "learned", "llama": "rotary"}  # fmt: skip


def load_tiny(root: Path, family: str) -> object:
    """The tiny ``family`` model built once under ``root`` and loaded through the registry
    (``hf:<folder>``; Marian keeps its model in a subfolder)."""
    import viz_transformer as vt

    path = root / family
    if not path.exists():
        BUILDERS[family](path)
    return vt.load_model(f"hf:{path / 'model' if family == 'marian' else path}")
