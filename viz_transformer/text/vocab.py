"""Plain word-level vocabulary of the built-in paper models, saved as JSON beside the weights."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
# single digits (any year or day is spelled digit by digit), words with inner hyphens, punctuation
_TOKEN_RE = re.compile(r"\d|[^\W\d_]+(?:-[^\W\d_]+)*|[^\w\s]")


def split_words(text: str) -> list[str]:
    """Lower-cased tokens: ``"Nov 21, 2026"`` -> ``["nov", "2", "1", ",", "2", "0", "2", "6"]``."""
    return _TOKEN_RE.findall(text.lower())


@dataclass(frozen=True)
class WordVocab:
    """Token <-> id table; ids 0-3 are ``<pad> <s> </s> <unk>``.

    ``detok`` says how output tokens join into text: ``"space"`` for words, ``"concat"`` for
    character-like outputs such as the ISO date ``2026-11-21``.
    """

    tokens: tuple[str, ...]
    detok: Literal["space", "concat"] = "space"

    def __post_init__(self) -> None:
        if self.tokens[:4] != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}, got {self.tokens[:4]}.")
        if len(set(self.tokens)) != len(self.tokens):
            raise ValueError("the vocabulary lists a token twice.")

    @classmethod
    def build(cls, texts: Iterable[str], detok: Literal["space", "concat"] = "space") -> WordVocab:
        seen = {t for text in texts for t in split_words(text)}
        return cls(SPECIALS + tuple(sorted(seen - set(SPECIALS))), detok)

    @cached_property
    def index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def bos_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    def source_tokens(self, text: str, ids: list[int]) -> tuple[str, ...]:
        """Display tokens of ``ids`` encoded from ``text`` (whole words: nothing is unknown)."""
        return tuple(self.tokens[i] for i in ids)

    def unknown_words(self, text: str) -> list[str]:
        """Words of ``text`` this vocabulary does not know, in order of appearance, once each."""
        index, out = self.index, []
        for w in split_words(text):
            if w not in index and w not in out:
                out.append(w)
        return out

    def encode(self, text: str, add_eos: bool = True) -> list[int]:
        """Token ids of ``text``, with ``</s>`` appended by default; unknown words raise.

        Raises:
            ValueError: names the unknown words and a few words the model does know.
        """
        unknown = self.unknown_words(text)
        if unknown:
            sample = ", ".join(t for t in self.tokens[4:16])
            raise ValueError(
                f"this model does not know {', '.join(repr(w) for w in unknown[:8])}. "
                f"It was trained on a fixed vocabulary of {len(self) - 4} words "
                f"(for example: {sample}); use only those."
            )
        index = self.index
        return [index[w] for w in split_words(text)] + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        words = [self.tokens[i] for i in ids if i >= len(SPECIALS)]
        return ("" if self.detok == "concat" else " ").join(words)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"detok": self.detok, "tokens": list(self.tokens)}, indent=0))

    @classmethod
    def load(cls, path: Path) -> WordVocab:
        data = json.loads(path.read_text())
        return cls(tuple(data["tokens"]), data["detok"])
