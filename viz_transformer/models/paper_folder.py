"""A paper-model folder, as shipped in ``weights/paper-*/`` and as training runs save checkpoints:
``meta.json`` (name, task, config, ...), ``model.safetensors`` and the tokenizer (``vocab.json``,
or ``spm.model`` for SentencePiece). Any such folder loads as ``paper:<folder>``; a missing file
or weights that do not fit the config get a ValueError that names the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from viz_transformer.models.paper_spec import LAYOUT, META, WEIGHTS, read_meta, tokenizer_file
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.paper import Transformer
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.text.vocab import WordVocab

# What a paper model reads text with: words (toy tasks) or SentencePiece pieces (real language).
# Both offer encode(text, add_eos), decode(ids), display tokens, index and bos/eos/pad ids.
Tokenizer = WordVocab | SentencePieceVocab


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
