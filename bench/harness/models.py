"""The benchmark models and texts. The models are the library's random builders
(``viz_transformer.testing``), offline, at the sizes issue 5 names:

- ``build_marian_base(folder)``: a Marian the size of ``Helsinki-NLP/opus-mt-en-de`` (d_model 512,
  6+6 layers, 8 heads, FFN 2048, 58,101 tokens, 512 positions, ~74 M parameters) with a
  SentencePiece ``MarianTokenizer``; load it as ``hf:<folder>``.
- ``build_bert_long(folder)``: a BERT encoder (d 384, 6 layers, 12 heads, 4,096 positions, 30,522
  tokens) with a WordPiece ``BertTokenizer``.
- ``paper_model(...)``: the paper's Transformer at the base size, wrapped in ``PaperModel``.
- ``text_of(count, n)``: a text of exactly ``n`` tokens by a model's own count.

Weights are random (seeded): these models are for timing and memory, not for reading attention.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from viz_transformer.testing.hf import build_bert_long, build_marian_base
from viz_transformer.testing.paper import WORDS, paper_model

__all__ = ["WORDS", "build_bert_long", "build_marian_base", "paper_model", "text_of"]


def text_of(count: Callable[[str], int], n: int, words: tuple[str, ...] = WORDS) -> str:
    """A text of exactly ``n`` tokens as ``count`` (text -> token count, special tokens included)
    counts them, made of the ``words`` that are a single token each, cycled.

    Raises:
        ValueError: ``n`` is below the special tokens' count, or the count comes out otherwise.
    """
    single = [w for w in words if count(f"{w} {w}") - count(w) == 1]
    if not single:
        raise ValueError("no word of the list is a single token for this tokenizer.")
    specials = count(single[0]) - 1
    if n <= specials:
        raise ValueError(f"{n} tokens leave no room for a word after {specials} special tokens.")
    text = " ".join(itertools.islice(itertools.cycle(single), n - specials))
    if (got := count(text)) != n:
        raise ValueError(f"the text came out as {got} tokens, not {n}.")
    return text
