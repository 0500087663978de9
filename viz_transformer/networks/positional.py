"""Sinusoidal positional encoding (section 3.5), paper (interleaved) or Marian (split) layout."""

from __future__ import annotations

from typing import Literal

import numpy as np


def sinusoidal_table(
    n_positions: int, d_model: int, layout: Literal["interleaved", "split"] = "interleaved"
) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...) (section 3.5).

    Args:
        n_positions: number of rows (positions 0 .. n_positions - 1).
        d_model: width; must be even.
        layout: ``"interleaved"`` puts sin and cos of one frequency side by side (the paper);
            ``"split"`` puts all sines first, then all cosines (Marian, fairseq, Bergamot).

    Returns:
        float32 array ``[n_positions, d_model]``.
    """
    if d_model % 2 or d_model < 2:
        raise ValueError(f"d_model={d_model} must be an even number >= 2.")
    if n_positions < 1:
        raise ValueError(f"n_positions={n_positions} must be at least 1.")
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (P, 1)
    inv_freq = 10000.0 ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (d/2,)
    angles = pos * inv_freq  # (P, d/2)
    table = np.empty((n_positions, d_model), dtype=np.float64)
    if layout == "interleaved":
        table[:, 0::2] = np.sin(angles)
        table[:, 1::2] = np.cos(angles)
    elif layout == "split":
        table[:, : d_model // 2] = np.sin(angles)
        table[:, d_model // 2 :] = np.cos(angles)
    else:
        raise ValueError(f"layout={layout!r}: use 'interleaved' or 'split'.")
    return table.astype(np.float32)
