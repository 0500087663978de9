"""A planted retrieval head in a grouped-query Llama read by a byte-level BPE tokenizer with a BOS
token: ``testing.planted``'s copying head where real models put their hard cases.

- Grouped-query attention 4:1 (8 query heads, 2 key/value heads); the copying query head
  (``PLANTED`` = layer 1, head 6) reads key/value head 1, not 0, so a query head mapped to the
  wrong key/value head (``h % kv`` instead of ``h // group``) loses the needle.
- The tokenizer is Llama 3's kind: GPT-2's 256 byte symbols and merges trained (``corpus``) so
  that each filler word is one token (bare and after a space, ``Ġ``) and each needle word two
  pieces (``Ġzor`` + ``blax``), a ``<s>`` before every text, byte-level offsets that include
  the space before a word, and decoding that gives the text back exactly.

The planted head's queries match, for each needle token, the key of the token after it in the
needle (a bigram table of the needle's own tokens, which are all distinct), and its values and
output projection copy that token to the logits; embeddings are one-hot (the hidden size is the
vocabulary's). Rotary positions turn only dimensions 0 and ``HEAD_DIM / 2``, which the planted
head leaves empty, so it matches by content wherever the needle stands.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from viz_transformer.testing.hf import save_model
from viz_transformer.testing.planted import one_hot_llama

FILLER = ("the", "cat", "sat", "on", "mat", "dog", "ran", "to", "red", "house", "small",
          "bird", "sings", "in", "tree", "we", "go", "home")  # fmt: skip
PIECES = (("zor", "blax"), ("quin", "tvex"), ("mori", "phane"), ("glen", "dral"),
          ("sul", "varo"), ("thus", "kin"))  # fmt: skip
NEEDLE = " ".join(a + b for a, b in PIECES)  # six words, twelve pieces
QUESTION = "What comes after zorblax quintvex moriphane?"  # its answer: the last three words
ANSWER_AT = 6  # the needle token the answer starts with (Ġglen)
PLANTED = (1, 6)  # (layer, query head) of the copying head: key/value head 1
HEADS, KV_HEADS, HEAD_DIM, LAYERS = 8, 2, 64, 2
BOS, EOS = "<s>", "</s>"


def corpus() -> list[str]:
    """What the tokenizer is trained on: each filler word bare and after a space, each needle
    word's first piece likewise and its second piece bare, never a needle word whole."""
    lines = [f"{w} {w}" for w in FILLER]
    lines += [f"{a} {a}" for a, _ in PIECES] + [b for _, b in PIECES]
    return lines * 3


def tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE trained on ``corpus`` (every word there becomes one token), with ``<s>``
    before every text (offsets ``(0, 0)``), as Llama 3's."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=[BOS, EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=f"{BOS} $A", special_tokens=[(BOS, tok.token_to_id(BOS))]
            ),
        ]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=BOS, eos_token=EOS, model_max_length=1024
    )


def haystack(sentences: int = 12, seed: int = 0) -> str:
    """Sentences of five filler words each (seeded), never a needle piece."""
    rng = random.Random(seed)
    return " ".join(" ".join(rng.choices(FILLER, k=5)) + "." for _ in range(sentences))


def needle_ids(tok: PreTrainedTokenizerFast) -> list[int]:
    """The needle's tokens as it stands in a text (after a space), without ``<s>``."""
    return tok(" " + NEEDLE, add_special_tokens=False)["input_ids"]


def _plant(model: LlamaForCausalLM, tok: PreTrainedTokenizerFast, strength: float) -> None:
    """Write the copying head into ``model`` (see the module docstring)."""
    layer, head = PLANTED
    attn = model.model.layers[layer].self_attn
    q_rows = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
    kv = head // (HEADS // KV_HEADS)
    kv_rows = slice(kv * HEAD_DIM, (kv + 1) * HEAD_DIM)
    attn.q_proj.weight[q_rows] = 0.0
    attn.k_proj.weight[kv_rows] = 0.0
    attn.v_proj.weight[kv_rows] = 0.0
    attn.o_proj.weight[:, q_rows] = 0.0
    ids = needle_ids(tok)
    first = tok(NEEDLE, add_special_tokens=False)["input_ids"][0]  # the bare first piece
    for d, t in enumerate(ids, start=1):  # dimension 0 (and HEAD_DIM / 2) rotates: left empty
        attn.k_proj.weight[kv * HEAD_DIM + d, t] = strength
        attn.v_proj.weight[kv * HEAD_DIM + d, t] = 1.0
        attn.o_proj.weight[t, head * HEAD_DIM + d] = 4.0
    for d, now in enumerate(ids[:-1], start=2):  # d: the key dimension of the token after
        for t in (now, first) if d == 2 else (now,):  # a line's first word starts bare
            attn.q_proj.weight[head * HEAD_DIM + d, t] = strength
    # the question form's prompt ends "Answer:": its ":" asks for the answer's first token
    cue = tok(":", add_special_tokens=False)["input_ids"][0]
    attn.q_proj.weight[head * HEAD_DIM + 1 + ANSWER_AT, cue] = strength
    # the needle's last piece, as the current token, ends the output: a residual dimension of
    # its own (past the one-hot ones), which no head writes
    spare = len(tok)
    model.model.embed_tokens.weight[ids[-1], spare] = 1.0
    for block in model.model.layers:
        block.self_attn.o_proj.weight[spare] = 0.0
    model.lm_head.weight[tok.eos_token_id, spare] = 30.0


def build_planted_gqa(folder: Path | str, seed: int = 0, strength: float = 3.0) -> Path:
    """Save the grouped-query planted model and its tokenizer in ``folder`` (``hf:<folder>``).

    Returns:
        ``folder``.
    """
    tok = tokenizer()
    vocab = len(tok)
    model = one_hot_llama(
        seed,
        (t for t in range(vocab) if t != tok.bos_token_id),  # <s> is never generated
        vocab_size=vocab,
        hidden_size=-(-(vocab + 1) // HEADS) * HEADS,  # one-hot embeddings and one more
        head_dim=HEAD_DIM,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.eos_token_id,
    )
    with torch.no_grad():
        _plant(model, tok, strength)
    return save_model(Path(folder), tok, model)
