"""A shared SentencePiece vocabulary for paper models that read real language (``paper-en-pt``).

It offers what the paper models use of :class:`viz_transformer.text.vocab.WordVocab`: ``encode``,
``decode``, display ``tokens``, ``index`` and the ids of ``<pad> <s> </s> <unk>`` (0-3 in both).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import sentencepiece as spm

SPECIAL_IDS = {"pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}  # the WordVocab layout
MODEL_FILE = "spm.model"


CONTINUES = "##"  # BERT's mark of a piece that continues the word before it: read ##s
UNKNOWN = "<unk:{}>"  # an unknown piece shown with the characters it stands for


def display_piece(piece: str) -> str:
    """A piece as shown: the word-start mark "▁" dropped (unless it is all there is); a piece
    that continues a word (no "▁" and starting with a letter or digit) gets ``CONTINUES`` in
    front, as BERT writes its pieces ("read ##s"); punctuation and special pieces stay bare."""
    if piece == "▁" or piece.startswith("▁"):
        return piece if piece == "▁" else piece[1:]
    return f"{CONTINUES}{piece}" if piece[:1].isalnum() else piece


def show_unknowns(
    tokens: Sequence[str], ids: Sequence[int], surfaces: Sequence[str], unk_id: int
) -> tuple[str, ...]:
    """``tokens`` with each unknown piece shown by its characters (``<unk:😀>``).

    Args:
        tokens: display tokens of ``ids``; ids: a prefix of ``encode(text)``, perhaps cut and
            with ``</s>`` appended; surfaces: ``encode(text, out_type=str)``, which gives an
            unknown piece's own characters; unk_id: the vocabulary's ``<unk>`` id.
    """
    return tuple(
        UNKNOWN.format(surfaces[k].removeprefix("▁") or surfaces[k])
        if i == unk_id and k < len(surfaces)
        else t
        for k, (i, t) in enumerate(zip(ids, tokens, strict=True))
    )


def unknown_characters(tokens: Iterable[str]) -> list[str]:
    """The characters behind each ``<unk:...>`` display token, in order."""
    head, tail = UNKNOWN.split("{}")
    return [t[len(head) : -len(tail)] for t in tokens if t.startswith(head) and t != "<unk>"]


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
        """The pieces as displayed (without "▁", ``##`` before a continuation), indexed by id."""
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

    def source_tokens(self, text: str, ids: Sequence[int]) -> tuple[str, ...]:
        """Display tokens of ``ids`` (from ``encode(text)``), unknown pieces as ``<unk:😀>``."""
        surfaces = self.processor.encode(text.strip(), out_type=str)
        tokens = [self.tokens[i] for i in ids]
        return show_unknowns(tokens, ids, surfaces, SPECIAL_IDS["unk_id"])

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``, special pieces dropped."""
        return self.processor.decode([i for i in ids if i > SPECIAL_IDS["unk_id"]])
