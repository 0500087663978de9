"""A tiny Llama whose one head is built to copy a needle: the planted retrieval head of the
retrieval-heads tests (``analysis.retrieval``).

Its tokenizer reads whole words (byte-level pre-tokenizer, so ``Ġword`` is "word" after a space,
and decoding gives back the spaces exactly). Each token is one direction of the 64-wide residual
stream (one-hot embeddings). The planted head (``PLANTED``) holds, for each needle word, a query
that matches the key of the word after it in the needle (``NEEDLE``), so at a step whose current
token is needle word ``i`` it attends to where needle word ``i + 1`` stands, and its values and
output projection copy that token to the output, which it dominates. Every other head has small
random weights. Rotary positions are switched off for all but the first pair of dimensions
(``rope_theta`` 1e300 makes the other frequencies 0), which the planted head leaves empty, so its
match is by content wherever the needle stands.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from viz_transformer.testing.hf import save_model, seeded

FILLER = ("the", "cat", "sat", "on", "mat", "dog", "ran", "to", "red", "house", "a", "small",
          "bird", "sings", "in", "tree")  # fmt: skip
NEEDLE_WORDS = ("zeta", "eta", "theta", "iota", "kappa", "lambda")
NEEDLE = " ".join(NEEDLE_WORDS)
PLANTED = (1, 2)  # (layer, head) of the copying head
SPECIALS = ("<|endoftext|>", "[UNK]", ".", "Ċ")
HIDDEN, HEADS, HEAD_DIM, LAYERS = 64, 4, 128, 2


def vocabulary() -> dict[str, int]:
    """Specials, then every word bare (a text's or a line's start) and after a space (``Ġ``)."""
    words = [*FILLER, *NEEDLE_WORDS]
    tokens = [*SPECIALS, *words, *(f"Ġ{w}" for w in words)]
    return {t: i for i, t in enumerate(tokens)}


def tokenizer() -> PreTrainedTokenizerFast:
    """Whole words, byte-level spaces; decoding returns the text exactly."""
    tok = Tokenizer(models.WordLevel(vocabulary(), unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", unk_token="[UNK]", model_max_length=512
    )


def haystack(sentences: int = 12, seed: int = 0) -> str:
    """Sentences of five filler words each (seeded), never a needle word."""
    rng = random.Random(seed)
    return " ".join(" ".join(rng.choices(FILLER, k=5)) + "." for _ in range(sentences))


def _plant(model: LlamaForCausalLM, vocab: dict[str, int], strength: float = 2.0) -> None:
    """Write the copying head into ``model`` (see the module docstring)."""
    layer, head = PLANTED
    attn = model.model.layers[layer].self_attn
    rows = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
    for w in (attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight):
        w[rows] = 0.0
    attn.o_proj.weight[:, rows] = 0.0
    base = head * HEAD_DIM + 1  # dimension 0 (and HEAD_DIM / 2) rotates: left empty
    for t in vocab.values():
        attn.k_proj.weight[base + t, t] = strength
        attn.v_proj.weight[base + t, t] = 1.0
        attn.o_proj.weight[t, base + t] = 1.0
    for i, word in enumerate(NEEDLE_WORDS[:-1]):
        after = vocab[f"Ġ{NEEDLE_WORDS[i + 1]}"]
        for form in (word, f"Ġ{word}"):
            attn.q_proj.weight[base + after, vocab[form]] = strength


def one_hot_llama(seed: int, generated: Iterable[int], **config: Any) -> LlamaForCausalLM:
    """A Llama of ``LlamaConfig(**config)`` (rotary only in the first pair of dimensions, an
    MLP 16 wide that writes nothing, untied output) drawn after ``seed``: small random weights,
    queries and keys wider; one-hot embeddings (token ``t`` is residual dimension ``t``) and an
    output row for each token in ``generated`` alone, so a head that copies a token's direction
    to the output makes that token next. A planted head is then written into it."""
    cfg = LlamaConfig(intermediate_size=16, rope_theta=1e300, tie_word_embeddings=False, **config)
    with seeded(seed), torch.no_grad():
        model = LlamaForCausalLM(cfg).eval()
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0.0, 0.3 if "q_proj" in name or "k_proj" in name else 0.02)
        emb, out = model.model.embed_tokens.weight, model.lm_head.weight
        emb.zero_()
        out.zero_()
        for t in range(cfg.vocab_size):
            emb[t, t] = 1.0
        for t in generated:
            out[t, t] = 1.0
        for block in model.model.layers:
            block.mlp.down_proj.weight.zero_()
    return model


def build_planted(folder: Path | str, seed: int = 0) -> Path:
    """Save the planted model and its tokenizer in ``folder`` (load it as ``hf:<folder>``).

    Returns:
        ``folder``.
    """
    vocab, tok = vocabulary(), tokenizer()
    model = one_hot_llama(
        seed,
        # only words after a space are ever generated: "..." reads as [UNK]
        (i for t, i in vocab.items() if t.startswith("Ġ")),
        vocab_size=len(vocab),
        hidden_size=HIDDEN,
        head_dim=HEAD_DIM,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        max_position_embeddings=512,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    with torch.no_grad():
        _plant(model, vocab)
    return save_model(Path(folder), tok, model)
