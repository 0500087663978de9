"""A tiny distillation, offline: a student of one layer each side, settings of a few steps, and
a corpus of "the <adjective> <noun>" sentences with their (made-up) translations and a
SentencePiece vocabulary trained on them. For tests of ``training.en_pt.distill`` that must not
need the real corpus or minutes of training."""

from __future__ import annotations

from pathlib import Path

from viz_transformer.text.spm import MODEL_FILE, train_sentencepiece
from viz_transformer.training.en_pt.distill_loop import DistillSettings

TINY_STUDENT = {"d_model": 32, "n_heads": 2, "n_encoder_layers": 1, "n_decoder_layers": 1,
                "d_ff": 64, "dropout": 0.0, "max_len": 64}  # fmt: skip
TINY_SETTINGS = DistillSettings(
    steps=3, batch_size=400, warmup=2, dev_size=8, log_every=1, init="scratch"
)
WORDS = {
    "cat": "gato",
    "dog": "cão",
    "house": "casa",
    "tree": "árvore",
    "book": "livro",
    "car": "carro",
    "girl": "menina",
    "boy": "menino",
    "bird": "pássaro",
    "river": "rio",
}


def write_tiny_corpus(folder: Path, adjectives: list[str], vocab_size: int) -> Path:
    """``corpus-0.tsv`` of "the <adjective> <noun>" pairs for every adjective and noun, every
    fifth held out, and a vocabulary of ``vocab_size`` pieces trained on it.

    Returns:
        the vocabulary's ``spm.model`` in ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (adj, noun) in enumerate((a, n) for a in adjectives for n in WORDS):
        split = "held_out" if i % 5 == 0 else "train"
        rows.append(f"the {adj} {noun}\to {WORDS[noun]} {adj}\t{split}")
    (folder / "corpus-0.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    texts = [t for row in rows for t in row.split("\t")[:2]]
    path = train_sentencepiece(texts, folder / "spm", vocab_size)
    if path != folder / MODEL_FILE:
        raise RuntimeError(f"the vocabulary went to {path}, not {folder / MODEL_FILE}.")
    return path
