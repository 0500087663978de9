"""A shared SentencePiece vocabulary for paper models that read real language (``paper-en-pt``).

It offers what the paper models use of :class:`viz_transformer.text.vocab.WordVocab`: ``encode``,
``decode``, display ``tokens``, ``index`` and the ids of ``<pad> <s> </s> <unk>`` (0-3 in both).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import sentencepiece as spm

SPECIAL_IDS = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}  # the WordVocab layout
MODEL_FILE = "spm.model"


def display_piece(piece: str) -> str:
    """A piece as shown: the word-start mark "▁" dropped unless it is all there is."""
    return piece if piece == "▁" else piece.removeprefix("▁")


def train_sentencepiece(texts: Iterable[str], prefix: Path, vocab_size: int = 8000) -> Path:
    """Train one unigram SentencePiece model on source and target text together (section 3.4).

    Args:
        texts: the sentences of both languages, one per item.
        prefix: writes ``<prefix>.model`` and ``<prefix>.vocab``.
        vocab_size: number of pieces, the four specials included.

    Returns:
        the path of the ``.model`` file.
    """
    prefix.parent.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(texts)),
        model_prefix=str(prefix),
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,  # keep every Portuguese accent
        pad_piece="<pad>",
        bos_piece="<s>",
        eos_piece="</s>",
        unk_piece="<unk>",
        num_threads=1,
        minloglevel=2,
        **SPECIAL_IDS,
    )
    return prefix.with_suffix(".model")


@dataclass(frozen=True, eq=False)
class SentencePieceVocab:
    """Subword ids <-> text through a SentencePiece model; unknown characters map to ``<unk>``."""

    path: Path
    processor: spm.SentencePieceProcessor = field(repr=False)

    @classmethod
    def load(cls, path: Path) -> SentencePieceVocab:
        processor = spm.SentencePieceProcessor(model_file=str(path))
        found = {
            "pad_id": processor.pad_id(),
            "bos_id": processor.bos_id(),
            "eos_id": processor.eos_id(),
            "unk_id": processor.unk_id(),
        }
        if found != SPECIAL_IDS:
            raise ValueError(
                f"{path} numbers its special pieces {found}; retrain it with {SPECIAL_IDS}."
            )
        return cls(Path(path), processor)

    @cached_property
    def pieces(self) -> tuple[str, ...]:
        """The raw pieces, "▁" marking the start of a word."""
        return tuple(self.processor.id_to_piece(i) for i in range(len(self)))

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        """The pieces as displayed (without "▁"), indexed by id."""
        return tuple(display_piece(p) for p in self.pieces)

    @cached_property
    def index(self) -> dict[str, int]:
        """Display token -> id (the first id when two pieces display alike)."""
        index: dict[str, int] = {}
        for i, token in enumerate(self.tokens):
            index.setdefault(token, i)
        return index

    def __len__(self) -> int:
        return self.processor.get_piece_size()

    @property
    def pad_id(self) -> int:
        return SPECIAL_IDS["pad_id"]

    @property
    def bos_id(self) -> int:
        return SPECIAL_IDS["bos_id"]

    @property
    def eos_id(self) -> int:
        return SPECIAL_IDS["eos_id"]

    def encode(self, text: str, add_eos: bool = True) -> list[int]:
        """Piece ids of ``text``, with ``</s>`` appended by default.

        Raises:
            ValueError: for empty text, which gives the model nothing to read.
        """
        if not text.strip():
            raise ValueError("the sentence is empty; type a sentence to translate.")
        ids = self.processor.encode(text.strip())
        return ids + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``, special pieces dropped."""
        return self.processor.decode([i for i in ids if i > SPECIAL_IDS["unk_id"]])
