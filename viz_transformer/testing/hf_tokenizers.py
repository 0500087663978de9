"""Real Hugging Face tokenizers built offline for the tiny test models (``testing.hf``): a
SentencePiece model trained on a few lines (Marian), byte-level BPE (GPT-2, BART), WordPiece
(BERT) and fixed piece lists (T5, Llama), each small enough to read."""

from __future__ import annotations

import json
from pathlib import Path

import sentencepiece as spm
from transformers import (
    BartTokenizer,
    BertTokenizer,
    GPT2Tokenizer,
    LlamaTokenizer,
    MarianTokenizer,
    T5Tokenizer,
)
from transformers.convert_slow_tokenizer import bytes_to_unicode

from viz_transformer.testing.paper import fillers

LINES = [
    "the cat sat on the mat",
    "the dog ran to the red house",
    "a small bird sings in the tree",
    "she reads the book and he writes a letter",
]
LINE_WORDS = sorted({w for line in LINES for w in line.split()})
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def _merges(mark: str) -> list[tuple[str, str]]:
    """BPE merges that make the words "the" and "cat" after ``mark`` (``Ġ``, ``▁``)."""
    return [
        (mark, "t"),
        ("h", "e"),
        (f"{mark}t", "he"),
        (mark, "c"),
        ("a", "t"),
        (f"{mark}c", "at"),
    ]


def byte_level(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """GPT-2 style byte-level BPE: ``specials``, every byte symbol, and merges that make Ġ-words.

    Returns:
        The vocabulary (token -> id) and the merges.
    """
    merges = _merges("Ġ")
    symbols = [*specials, *bytes_to_unicode().values(), *("".join(m) for m in merges)]
    return {s: i for i, s in enumerate(dict.fromkeys(symbols))}, merges


def gpt2_tokenizer() -> GPT2Tokenizer:
    vocab, merges = byte_level(["<|endoftext|>"])
    return GPT2Tokenizer(vocab=vocab, merges=merges)


def bart_tokenizer() -> BartTokenizer:
    vocab, merges = byte_level(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return BartTokenizer(vocab=vocab, merges=merges)


def t5_tokenizer() -> T5Tokenizer:
    """SentencePiece-style pieces: ``▁`` + each word of ``LINES``, and single letters."""
    pieces = ["<pad>", "</s>", "<unk>", "▁", *(f"▁{w}" for w in LINE_WORDS), *LETTERS]
    return T5Tokenizer(vocab=[(p, -float(i)) for i, p in enumerate(pieces)], extra_ids=0)


def llama_tokenizer() -> LlamaTokenizer:
    """Letters and ``▁`` merged into ``▁the`` and ``▁cat``; a ``<s>`` before every text."""
    merges = _merges("▁")
    pieces = ["<unk>", "<s>", "</s>", "▁", *LETTERS, *("".join(m) for m in merges)]
    vocab = {p: i for i, p in enumerate(dict.fromkeys(pieces))}
    return LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True)


def marian_tokenizer(
    folder: Path, lines: list[str], pieces: int, size: int | None = None, **train: object
) -> tuple[MarianTokenizer, dict[str, int]]:
    """A SentencePiece model of about ``pieces`` pieces trained on ``lines`` in ``folder`` and
    Marian's vocabulary around it: ``</s>`` = 0, ``<unk>`` = 1, ``<pad>`` last (the decoder
    start), padded with filler pieces to ``size`` entries when given.

    Returns:
        The tokenizer and its vocabulary (token -> id).
    """
    prefix = folder / "sp"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_prefix=str(prefix),
        vocab_size=pieces,
        hard_vocab_limit=False,
        bos_id=-1,
        eos_id=-1,
        unk_id=0,
        minloglevel=2,
        **train,
    )
    sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
    head = ["</s>", "<unk>", *(sp.id_to_piece(i) for i in range(1, sp.get_piece_size()))]
    padding = fillers(size - len(head) - 1, set(head)) if size else []
    vocab = {t: i for i, t in enumerate([*head, *padding, "<pad>"])}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tok = MarianTokenizer(f"{prefix}.model", f"{prefix}.model", str(folder / "vocab.json"))
    return tok, vocab


def wordpiece(
    words: list[str], size: int | None = None, **options: object
) -> tuple[BertTokenizer, list[str]]:
    """BERT's specials, ``words``, letters and ``##`` letters, padded with ``[unused]`` entries
    to ``size`` when given.

    Returns:
        The tokenizer and its token list (a word that is also a letter stands twice in the list
        and once, with the later id, in the vocabulary).
    """
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    head = [*specials, *words, *LETTERS, *(f"##{c}" for c in LETTERS)]
    tokens = head + [f"[unused{i}]" for i in range((size or len(head)) - len(head))]
    return BertTokenizer(vocab={t: i for i, t in enumerate(tokens)}, **options), tokens
