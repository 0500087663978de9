"""Which tokenizer a model reads text with, known before the model loads: a fingerprint of its
vocabulary files, so a page can say that two models cannot be lined up token by token before
anyone waits for a load (the built-in LLM's first load converts its weights for half a minute).

Two models with the same vocabulary files tokenize every text alike; different files almost
always mean different tokens (the comparison itself still checks every sentence).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import sentencepiece as spm

from viz_transformer.models.bergamot_spec import one_file
from viz_transformer.models.hf import smollm2
from viz_transformer.models.paper_spec import tokenizer_file
from viz_transformer.models.spec import ModelSpec

# the files that decide how a Hugging Face model splits text into ids, when present
HF_FILES = ("tokenizer.json", "vocab.json", "vocab.txt", "merges.txt", "spiece.model",
            "sentencepiece.bpe.model", "source.spm", "target.spm", "tokenizer.model")  # fmt: skip


def tokenizer_key(spec: ModelSpec) -> str | None:
    """A fingerprint of how ``spec``'s model splits text into tokens (equal for two models that
    tokenize alike), or None when it cannot be known without loading the model."""
    files = _vocabulary_files(spec)
    if isinstance(files, str):
        return files
    if not files:
        return None
    return _digest(tuple(str(f.resolve()) for f in files))


def _vocabulary_files(spec: ModelSpec) -> list[Path] | str:
    """The files of the model's vocabulary, or a name for one kept inside its weights file."""
    path = spec.path
    if spec.family == "paper":
        return [tokenizer_file(Path(path))]
    if spec.family == "bergamot":
        return [one_file(Path(path), "vocab.*.spm")]
    if spec.name == smollm2.NAME and not smollm2.is_converted():
        return f"gguf:{smollm2.GGUF_NAME}"  # its tokenizer is inside the GGUF until converted
    folder = Path(path) if Path(path).is_absolute() else _cached_snapshot(str(path))
    if folder is None:
        return []
    if (folder / "tokenizer.json").is_file():  # a fast tokenizer: this file alone decides
        return [folder / "tokenizer.json"]
    return [folder / name for name in HF_FILES if (folder / name).is_file()]


def _cached_snapshot(ident: str) -> Path | None:
    """The local snapshot folder of a hub id (where its config.json lies), or None."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ident, "config.json")
    return Path(found).parent if isinstance(found, str) else None


@functools.lru_cache(maxsize=64)
def _digest(paths: tuple[str, ...]) -> str:
    """SHA-1 of what decides the tokens in each file: a SentencePiece model's ordinary pieces
    and scores (the special pieces a student adds, ``<pad>`` or ``<s>``, and their numbering
    change no token of a text), a ``vocab.json``'s words, any other file's bytes. Cached per
    path: a vocabulary file never changes under a running server."""
    sha = hashlib.sha1()
    for path in map(Path, paths):
        sha.update(path.name.encode() if len(paths) > 1 else b"")
        if path.suffix in (".model", ".spm"):
            sp = spm.SentencePieceProcessor(model_file=str(path))
            ordinary = (i for i in range(sp.get_piece_size()) if not sp.is_control(i))
            pieces = sorted(f"{sp.id_to_piece(i)}\t{sp.get_score(i)}" for i in ordinary)
            sha.update("\n".join(pieces).encode())
        elif path.name == "vocab.json":  # ours: {"tokens": [...], "detok": ...}; HF: {word: id}
            words = json.loads(path.read_text(encoding="utf-8"))
            words = [*words["tokens"], words.get("detok", "")] if "tokens" in words else words
            sha.update("\n".join(sorted(words)).encode())
        else:
            sha.update(path.read_bytes())
    return sha.hexdigest()
