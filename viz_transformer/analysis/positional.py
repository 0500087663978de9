"""Positional-encoding analysis (section 3.5): the sinusoid's geometry, and what a loaded model
actually adds to its token embeddings (paper and Bergamot sinusoids, learned tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from viz_transformer.models.base import LoadedModel
from viz_transformer.networks.marian import marian_positions

Layout = Literal["interleaved", "split"]
BERGAMOT_POSITIONS = 256  # Bergamot computes positions on the fly; its inputs stop at 256 tokens


def marian_table(n_positions: int, d_model: int) -> np.ndarray:
    """Marian's (and Bergamot's) table: split layout, frequencies exp(-i log(10000) / (d/2 - 1)).

    Returns:
        float32 ``[n_positions, d_model]``.
    """
    return marian_positions(0, n_positions, d_model, torch.device("cpu")).numpy()


def _pairs(d_model: int, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the sine and of the cosine of each frequency i = 0 .. d/2 - 1."""
    i = np.arange(d_model // 2)
    return (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d_model // 2)


def wavelength(dim: int, d_model: int, layout: Layout = "interleaved") -> float:
    """Wavelength of column ``dim`` in positions: 2 pi 10000^(2i/d), from 2 pi to ~10000 * 2 pi."""
    i = dim // 2 if layout == "interleaved" else dim % (d_model // 2)
    return 2 * math.pi * 10000.0 ** (2 * i / d_model)


def shift_matrix(d_model: int, offset: int, layout: Layout = "interleaved") -> np.ndarray:
    """The rotation M_k with PE(pos + k) = M_k PE(pos) at every pos (section 3.5, "linear").

    Each frequency w's (sin, cos) pair turns by the angle k w, whatever the position.

    Returns:
        float64 ``[d_model, d_model]``, block-diagonal up to the layout's column order.
    """
    angle = offset * 10000.0 ** (-np.arange(0, d_model, 2) / d_model)  # (d/2,)
    s, c = _pairs(d_model, layout)
    m = np.zeros((d_model, d_model))
    m[s, s], m[s, c] = np.cos(angle), np.sin(angle)  # sin(a + b) = sin a cos b + cos a sin b
    m[c, s], m[c, c] = -np.sin(angle), np.cos(angle)  # cos(a + b) = cos a cos b - sin a sin b
    return m


def similarity(table: np.ndarray, cosine: bool = False) -> np.ndarray:
    """Position-position matrix PE PE^T (or cosine similarities), ``[P, P]`` float32."""
    t = np.asarray(table, dtype=np.float64)
    if cosine:
        t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    return (t @ t.T).astype(np.float32)


def offset_dots(table: np.ndarray, starts: list[int], max_offset: int) -> np.ndarray:
    """PE(pos) . PE(pos + k) for each start pos and k = 0 .. max_offset.

    For the sinusoid it equals sum_i cos(k w_i): the same curve from every start.

    Returns:
        float32 ``[len(starts), max_offset + 1]``.
    """
    if max(starts) + max_offset >= len(table):
        raise ValueError(
            f"start {max(starts)} + offset {max_offset} passes the table's {len(table)} rows; "
            "choose a longer table or a smaller offset."
        )
    rows = [table[p : p + max_offset + 1] @ table[p] for p in starts]
    return np.stack(rows).astype(np.float32)


@dataclass(frozen=True)
class InputVectors:
    """What a model adds at its input: scale * token embedding + position vector (section 3.4)."""

    scale: float  # multiplier of the token embedding: sqrt(d_model), or 1
    token_norms: np.ndarray  # [vocab] norm of scale * embedding, every vocabulary entry
    positions: np.ndarray | None  # [P, d_model] position vectors added, None if none are added
    source: str  # how the positions were made, for captions


def _hf_parts(model: LoadedModel) -> tuple[torch.Tensor, float, np.ndarray | None]:
    """Embedding weight, its scale (BART/Marian ``embed_scale``) and the added position table."""
    module = model.module
    emb = module.get_input_embeddings()
    scale = getattr(emb, "embed_scale", None)
    if scale is None:
        scale = next((m.embed_scale for m in module.modules() if hasattr(m, "embed_scale")), 1.0)
    table = model.position_table()
    if table is None and model.spec.positions == "sinusoidal":  # Marian keeps its sinusoid
        found = [m for n, m in module.named_modules() if n.endswith("embed_positions")]
        table = found[0].weight.detach().to("cpu", torch.float32).numpy() if found else None
    return emb.weight, float(scale or 1.0), table


def input_vectors(model: LoadedModel) -> InputVectors:
    """Token-embedding norms (times the model's scale) and the position table of ``model``.

    Dispatches on ``spec.family``: paper (``src_embed``, sqrt(d_model), the paper's sinusoid),
    Bergamot (``embed``, sqrt(d_model), Marian's sinusoid), Hugging Face (input embeddings,
    their ``embed_scale`` if any, learned or sinusoidal table; None for rotary and relative).
    """
    family = model.spec.family
    module = model.module
    if family == "paper":
        weight, scale = module.src_embed.weight, math.sqrt(module.cfg.d_model)
        table, source = model.position_table(), "the paper's sinusoid (interleaved)"
    elif family == "bergamot":
        d = module.cfg.d_model
        weight, scale = module.embed.weight, math.sqrt(d)
        table = marian_table(BERGAMOT_POSITIONS, d)
        source = "Marian's sinusoid (split, its own frequencies)"
    else:
        weight, scale, table = _hf_parts(model)
        source = f"{model.spec.positions} positions"
    with torch.no_grad():
        norms = torch.linalg.vector_norm(weight.float(), dim=-1) * scale  # (vocab,)
    return InputVectors(scale, norms.cpu().numpy(), table, source)


def sentence_ids(model: LoadedModel, text: str) -> tuple[list[int], tuple[str, ...]]:
    """The source ids of ``text`` as ``model`` reads them, and their display tokens.

    Raises:
        ValueError: text the model cannot read (unknown word, too long), with the fix.
    """
    family = model.spec.family
    if family == "paper":
        vocab = model.vocab
        ids = vocab.encode(text)
        return ids, tuple(vocab.tokens[i] for i in ids)
    if family == "bergamot":
        ids = model.source_ids(text)
        return ids, model.pieces(ids)
    ids = model.encode_text(text)
    return ids, model.token_labels(ids)


def sentence_norms(model: LoadedModel, text: str) -> dict[str, np.ndarray | tuple[str, ...]]:
    """Per token of ``text``: norm of scale * embedding and of the position vector added to it.

    Returns:
        ``"tokens"``, ``"token_norm"`` ``[S]`` and ``"position_norm"`` ``[S]`` (NaN when the
        model adds no position vector).
    """
    ids, tokens = sentence_ids(model, text)
    parts = input_vectors(model)
    pos = np.full(len(ids), np.nan, np.float32)
    if parts.positions is not None:
        if len(ids) > len(parts.positions):
            raise ValueError(f"{len(ids)} tokens exceed {len(parts.positions)} positions.")
        pos = np.linalg.norm(parts.positions[: len(ids)], axis=1).astype(np.float32)
    return {"tokens": tokens, "token_norm": parts.token_norms[ids], "position_norm": pos}
