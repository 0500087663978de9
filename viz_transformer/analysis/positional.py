"""Positional-encoding analysis (section 3.5): the sinusoid's geometry, and what a loaded model
actually adds to its token embeddings (its ``input_embedding()``: sinusoids, learned tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from viz_transformer.models.base import LoadedModel

Layout = Literal["interleaved", "split"]


def _pairs(d_model: int, layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the sine and of the cosine of each frequency i = 0 .. d/2 - 1."""
    i = np.arange(d_model // 2)
    return (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d_model // 2)


def wavelength(dim: int, d_model: int, layout: Layout = "interleaved") -> float:
    """Wavelength of column ``dim`` in positions: 2 pi 10000^(2i/d), from 2 pi to ~10000 * 2 pi."""
    i = dim // 2 if layout == "interleaved" else dim % (d_model // 2)
    return 2 * math.pi * 10000.0 ** (2 * i / d_model)


def wavelengths(d_model: int, layout: Layout = "interleaved") -> np.ndarray:
    """``wavelength`` of every column, float64 ``[d_model]``."""
    i = np.arange(d_model)
    i = i // 2 if layout == "interleaved" else i % (d_model // 2)
    return 2 * np.pi * 10000.0 ** (2 * i / d_model)


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


def shift_error(table: np.ndarray, layout: Layout = "interleaved", offset: int = 1) -> float:
    """Largest ``|PE(pos + k) - M_k PE(pos)|`` over the table: ~0 for the sinusoid of
    ``layout`` (rounding), large for any other table."""
    t = np.asarray(table, np.float64)
    m = shift_matrix(t.shape[1], offset, layout)
    return float(np.abs(t[offset:] - t[:-offset] @ m.T).max())


@dataclass(frozen=True)
class SinusoidViews:
    """What the page shows of one sinusoid table (section 3.5).

    Attributes:
        wavelengths: float64 ``[d_model]``, each column's wavelength in positions.
        dots: float32 ``[R, R]``, PE PE^T of the first ``R = min(P, max_rows)`` positions.
        starts: the start positions of ``offsets`` (0, P // 4, P // 2).
        offsets: float32 ``[3, P - P // 2]``, PE(start) . PE(start + k) for k = 0, 1, ...
        shift_error: ``shift_error(table, layout)`` for k = 1.
    """

    wavelengths: np.ndarray
    dots: np.ndarray
    starts: tuple[int, ...]
    offsets: np.ndarray
    shift_error: float


def sinusoid_views(table: np.ndarray, layout: Layout, max_rows: int) -> SinusoidViews:
    """The page's views of ``table`` ``[P, d_model]`` (a sinusoid of ``layout``)."""
    length, d_model = table.shape
    starts = (0, length // 4, length // 2)
    return SinusoidViews(
        wavelengths=wavelengths(d_model, layout),
        dots=similarity(table[:max_rows]),
        starts=starts,
        offsets=offset_dots(table, list(starts), length - 1 - starts[-1]),
        shift_error=shift_error(table, layout) if length > 1 else 0.0,
    )


@dataclass(frozen=True)
class InputVectors:
    """What a model adds at its input: scale * token embedding + position vector (section 3.4)."""

    scale: float  # multiplier of the token embedding: sqrt(d_model), an embed_scale, or 1
    token_norms: np.ndarray  # [vocab] norm of scale * embedding, every vocabulary entry
    positions: np.ndarray | None  # [P, d_model] position vectors added, None if none are added
    source: str  # how the positions were made, for captions
    note: str | None = None  # what this model does differently, for a caption


def input_vectors(model: LoadedModel) -> InputVectors:
    """Token-embedding norms (times the model's scale) and the position table of ``model``
    (``model.input_embedding()``; None for rotary and relative positions)."""
    emb = model.input_embedding()
    with torch.no_grad():
        norms = torch.linalg.vector_norm(emb.weight.float(), dim=-1) * emb.scale  # (vocab,)
    return InputVectors(emb.scale, norms.cpu().numpy(), emb.positions, emb.source, emb.note)


def sentence_norms(model: LoadedModel, text: str) -> dict[str, np.ndarray | tuple[str, ...]]:
    """Per token of ``text``: norm of scale * embedding and of the position vector added to it.

    Returns:
        ``"tokens"``, ``"token_norm"`` ``[S]`` and ``"position_norm"`` ``[S]`` (NaN when the
        model adds no position vector).

    Raises:
        ValueError: text the model cannot read, or more tokens than positions.
    """
    ids, tokens = model.source_ids(text)
    parts = input_vectors(model)
    pos = np.full(len(ids), np.nan, np.float32)
    if parts.positions is not None:
        if len(ids) > len(parts.positions):
            raise ValueError(f"{len(ids)} tokens exceed {len(parts.positions)} positions.")
        pos = np.linalg.norm(parts.positions[: len(ids)], axis=1).astype(np.float32)
    return {"tokens": tokens, "token_norm": parts.token_norms[ids], "position_norm": pos}


@dataclass(frozen=True)
class InputNorms:
    """The numbers the page writes about what a model adds at its input.

    Attributes:
        positions: float32 ``[min(length, P), d_model]``, the position table cut to the page's
            length.
        position_norms: ``[P]``, the norm of every position vector of the whole table.
        token_percentiles: the 5th, 50th and 95th percentile of the token-embedding norms.
        position_median: the median of ``position_norms``.
        cosine: float32 ``[R, R]`` cosine similarity of the first ``R = min(length,
            max_rows)`` positions, or None when not asked for.
    """

    positions: np.ndarray
    position_norms: np.ndarray
    token_percentiles: tuple[float, float, float]
    position_median: float
    cosine: np.ndarray | None


def input_norms(
    parts: InputVectors, length: int, max_rows: int, cosine: bool = False
) -> InputNorms:
    """``parts``' norms and its table cut to ``length`` rows (``parts.positions`` must exist).

    Raises:
        ValueError: a model that adds no position vectors.
    """
    if parts.positions is None:
        raise ValueError(f"no position table: the positions are {parts.source}.")
    norms = np.linalg.norm(parts.positions, axis=1)
    lo, mid, hi = np.percentile(parts.token_norms, [5, 50, 95])
    cut = parts.positions[: min(length, len(parts.positions))]
    return InputNorms(
        positions=cut,
        position_norms=norms,
        token_percentiles=(float(lo), float(mid), float(hi)),
        position_median=float(np.median(norms)),
        cosine=similarity(cut[:max_rows], cosine=True) if cosine else None,
    )
