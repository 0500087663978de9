"""What the notebook widgets send, decoded back into weights for the tests that check it
(``viz_transformer.notebook.payload``'s grid and lines)."""

from __future__ import annotations

import numpy as np


def grid_maps(g: dict) -> np.ndarray:
    """``[layers, heads, rows, cols]`` weights decoded from a grid payload."""
    cells = np.frombuffer(g["maps"], np.uint8).reshape(g["layers"], g["heads"], g["rows"], -1)
    return cells / 255 * np.asarray(g["scale"]).reshape(g["layers"], g["heads"], 1, 1)


def line_weights(lines: dict, head: int) -> np.ndarray:
    """A head's window ``[nq, nk]`` with its lines' weights, 0 where no line is sent."""
    h = lines["heads"][head]
    z = np.zeros((lines["nq"], lines["nk"]))
    i, j = np.frombuffer(h["i"], "<u2"), np.frombuffer(h["j"], "<u2")
    z[i, j] = np.frombuffer(h["w"], np.uint8) / 255
    return z
