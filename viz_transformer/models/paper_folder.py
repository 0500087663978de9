"""A paper-model folder, as shipped in ``weights/paper-*/`` and as training runs save checkpoints:
``meta.json`` (name, task, config, ...), ``model.safetensors`` and the tokenizer (``vocab.json``,
or ``spm.model`` for SentencePiece). Any such folder loads as ``paper:<folder>``; a missing file
or weights that do not fit the config get a ValueError that names the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from viz_transformer import settings
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.text.vocab import WordVocab

PREFIX = "paper:"
META, WEIGHTS, WORDS = "meta.json", "model.safetensors", "vocab.json"
LAYOUT = f"a paper-model folder holds {META}, {WEIGHTS} and {WORDS} (or {MODEL_FILE})"
# What a paper model reads text with: words (toy tasks) or SentencePiece pieces (real language).
# Both offer encode(text, add_eos), decode(ids), display tokens, index and bos/eos/pad ids.
Tokenizer = WordVocab | SentencePieceVocab


def spec_from_meta(meta: dict[str, Any], folder: Path, name: str) -> ModelSpec:
    """The spec of the paper model described by ``meta`` (its ``meta.json``) in ``folder``."""
    task = str(meta.get("task", ""))
    if task.startswith("distill-"):  # real language: distill-en-pt reads en, writes pt
        source, target = task.removeprefix("distill-").split("-")
        data: dict[str, str | None] = {"source_lang": source, "target_lang": target}
    else:
        data = {"task": task or "unknown"}
    return ModelSpec(
        name=name,
        family="paper",
        description=str(meta.get("description", f"paper model from {folder}")),
        example=str(meta.get("example", "")),
        shows=("encoder", "decoder", "cross"),
        positions="sinusoidal",
        path=folder,
        curves={"scaled", "unscaled"} <= set(meta.get("curves") or {}),
        teacher=meta.get("teacher"),
        patching=_patching(meta),
        **data,
    )


def _patching(meta: dict[str, Any]) -> tuple[str, str] | None:
    """meta.json's ``"examples": {"patching": [clean, corrupted]}``, when it has one."""
    pair = (meta.get("examples") or {}).get("patching")
    return None if pair is None else (str(pair[0]), str(pair[1]))


def read_meta(folder: Path) -> dict[str, Any]:
    """``folder/meta.json`` as a dict holding a ``config``, or a ValueError naming the file."""
    path = folder / META
    if not path.is_file():
        raise ValueError(f"{path} is missing: {LAYOUT}.")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); save the model again.") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise ValueError(f'{path} has no "config" object (the network\'s sizes); {LAYOUT}.')
    return meta


def folder_spec(name: str) -> ModelSpec:
    """The spec of ``paper:<folder>`` after checking that every file of the layout is there.

    Raises:
        ValueError: no such folder, a missing or unreadable file (named), or a folder outside
            ``VT_MODEL_ROOT`` when that is set.
    """
    raw = name.removeprefix(PREFIX).strip()
    if not raw:
        raise ValueError(
            f"{name!r}: name a folder, e.g. paper:{settings.WEIGHTS_DIR / 'paper-reverse'}."
        )
    folder = Path(raw).expanduser().resolve()
    allowed = (settings.MODEL_ROOT, settings.WEIGHTS_DIR, settings.CHECKPOINTS_DIR)
    if settings.MODEL_ROOT and not any(folder.is_relative_to(r) for r in allowed if r):
        raise ValueError(f"{name}: paper folders must lie under {settings.MODEL_ROOT} here.")
    if not folder.is_dir():
        raise ValueError(f"{name}: {folder} is not a folder; {LAYOUT}.")
    meta = read_meta(folder)
    if not (folder / WEIGHTS).is_file():
        raise ValueError(f"{folder / WEIGHTS} is missing: {LAYOUT}.")
    tokenizer_file(folder)
    return spec_from_meta(meta, folder, f"{PREFIX}{folder}")


def tokenizer_file(folder: Path) -> Path:
    """``spm.model`` when present (SentencePiece), else ``vocab.json``; a ValueError if neither."""
    for file in (folder / MODEL_FILE, folder / WORDS):
        if file.is_file():
            return file
    raise ValueError(f"{folder / WORDS} (or {MODEL_FILE}) is missing: {LAYOUT}.")


def load_folder(folder: Path) -> tuple[Transformer, Tokenizer, dict[str, Any]]:
    """The network (float32, CPU, eval mode), its tokenizer and ``meta.json`` of ``folder``.

    Raises:
        ValueError: a missing file, a config the network refuses, weights or a vocabulary
            that do not fit the config: the message names the file and what to do.
        RuntimeError: a weights file that cannot be read (damaged).
    """
    meta = read_meta(folder)
    try:
        cfg = TransformerConfig.from_dict(meta["config"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{folder / META}: its config is invalid ({exc}).") from None
    weights = folder / WEIGHTS
    if not weights.is_file():
        raise ValueError(f"{weights} is missing: {LAYOUT}.")
    try:
        state = load_file(str(weights))  # float16 or float32: load_state_dict casts
    except (SafetensorError, OSError) as exc:
        # damaged rather than mismatched: the registry's "cannot be loaded" message wraps it
        raise RuntimeError(f"{weights} cannot be read ({exc}); save the model again.") from None
    module = Transformer(cfg)
    retrain = meta.get(
        "retrain", f"python -m viz_transformer.training.tasks.train --task {meta.get('task')}"
    )
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # a tensor of another shape
        first = str(exc).split("size mismatch for ", 1)[-1].split("\n", 1)[0]
        raise ValueError(
            f"{weights} does not match the config in {folder / META} (size "
            f"mismatch for {first}); retrain it with `{retrain}`."
        ) from None
    tied = {"tgt_embed.weight", "generator.weight"} if cfg.tie_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ValueError(
            f"{weights} does not match the config in {folder / META} (missing "
            f"{sorted(set(missing) - tied)}, unexpected {unexpected}); retrain it "
            f"with `{retrain}`."
        )
    file = tokenizer_file(folder)
    vocab: Tokenizer = (
        SentencePieceVocab.load(file) if file.name == MODEL_FILE else WordVocab.load(file)
    )
    if len(vocab) != cfg.vocab_size:
        raise ValueError(
            f"{file} holds {len(vocab)} tokens but the config in {folder / META} "
            f"says vocab_size={cfg.vocab_size}: they belong to different models."
        )
    return module.to(torch.float32).eval(), vocab, meta
