"""What one attention call computes, as the tiles evaluate it, read from the call itself.

A head's weight of query ``i`` on key ``j`` is

    softmax_j( softcap(q_i . k_j * scale) + bias_h(i, j) ),  keys the mask hides at -inf,

with, for attention sinks, one more logit per head (and row) in the softmax's normaliser: the row
then sums to 1 with the sink's weight, and the map shows the keys' share. Nothing here holds a
``T x T`` tensor that the model did not hand over: the mask is the index predicate its mask was
built from, evaluated per tile, and a relative bias that depends on ``j - i`` alone (T5's
buckets) is kept as its ``n_q + n_k - 1`` diagonals.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

# transformers' ``mask_function(batch_idx, head_idx, q_idx, kv_idx)``: broadcast index tensors in,
# True where the query sees the key
Predicate = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]
TOEPLITZ_ROWS = 256  # rows of a bias compared with its diagonals at a time


def _cols(cols: torch.Tensor | None, n_k: int, device: torch.device) -> torch.Tensor:
    return torch.arange(n_k, device=device) if cols is None else cols


@dataclass(frozen=True)
class Mask:
    """Which keys each query sees.

    Attributes:
        predicate: the index predicate (padding included) with the offsets of its positions;
            None: no predicate.
        q_offset, kv_offset: added to row and key positions before the predicate reads them.
        causal: query ``i`` sees keys ``j <= i + (n_k - n_q)`` (what SDPA does without a mask).
        n_q: the call's query rows (``causal`` needs it when keys outnumber them).
        dense: ``(1 | heads, n_q | 1, n_k)``, a mask the model handed over as a tensor: bool
            (True: seen) or additive float; one row stands for every row.
        batch: the batch element the predicate is asked about.
        device: where the predicate's own tensors (a padding mask) are.
    """

    predicate: Predicate | None = None
    q_offset: int = 0
    kv_offset: int = 0
    causal: bool = False
    n_q: int = 0
    dense: torch.Tensor | None = None
    batch: int = 0
    device: str = "cpu"

    def apply_(
        self, s: torch.Tensor, head: int, rows: torch.Tensor, cols: torch.Tensor | None, n_k: int
    ) -> None:
        """Hide (``-inf``) or add to ``s`` ``(len(rows), len(cols))`` in place."""
        at = _cols(cols, n_k, s.device)
        if self.causal:
            s.masked_fill_(at[None, :] > rows[:, None] + (n_k - (self.n_q or n_k)), -math.inf)
        if self.predicate is not None:
            seen = self.allowed(rows, at)
            s.masked_fill_(~seen, -math.inf)
        if self.dense is not None:
            part = self.dense[min(head, self.dense.shape[0] - 1)]  # (n_q | 1, n_k)
            part = part.index_select(0, rows) if part.shape[0] > 1 else part
            part = part.index_select(1, at) if cols is not None else part
            if part.dtype == torch.bool:
                s.masked_fill_(~part, -math.inf)
            else:
                s.add_(part.float())

    def allowed(self, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """The predicate at ``rows x cols``, ``(len(rows), len(cols))`` bool."""
        assert self.predicate is not None
        r, c = rows.to(self.device), cols.to(self.device)
        b, h = r.new_full((), self.batch), r.new_zeros(())  # no copy from the host per tile
        seen = self.predicate(b, h, r[:, None] + self.q_offset, c[None, :] + self.kv_offset)
        return seen.to(rows.device).expand(len(rows), len(cols))

    def dense_allowed(self, n_q: int, n_k: int, device: torch.device) -> torch.Tensor:
        """The predicate over every cell, ``(1, n_q, n_k)`` bool (a pickled copy's mask)."""
        return self.allowed(torch.arange(n_q, device=device), torch.arange(n_k, device=device))[
            None
        ]


@dataclass(frozen=True)
class Bias:
    """An additive per-head bias: ``diagonals`` ``(1 | heads, n_q + n_k - 1)`` when it depends on
    ``j - i`` alone (``bias[h, i, j] = diagonals[h, j - i + n_q - 1]``), else ``dense``
    ``(1 | heads, n_q, n_k)`` as the model made it."""

    n_q: int
    diagonals: torch.Tensor | None = None
    dense: torch.Tensor | None = None

    @classmethod
    def of(cls, bias: torch.Tensor) -> Bias:
        """``bias`` ``(1 | heads, n_q, n_k)``, kept as its diagonals when every row is the row
        above shifted by one (checked exactly, ``TOEPLITZ_ROWS`` rows at a time)."""
        _, n_q, n_k = bias.shape
        first_col = bias[:, :, 0].flip(-1)  # (h, n_q): diagonals -(n_q - 1) .. 0
        diag = torch.cat([first_col, bias[:, 0, 1:]], dim=-1).float()  # (h, n_q + n_k - 1)
        cols = torch.arange(n_k, device=bias.device)
        for r0 in range(0, n_q, TOEPLITZ_ROWS):
            rows = torch.arange(r0, min(r0 + TOEPLITZ_ROWS, n_q), device=bias.device)
            index = cols[None, :] - rows[:, None] + n_q - 1  # (r, n_k)
            if not torch.equal(diag[:, index], bias[:, r0 : r0 + len(rows)].float()):
                return cls(n_q, dense=bias)
        return cls(n_q, diagonals=diag)

    def add_(
        self, s: torch.Tensor, head: int, rows: torch.Tensor, cols: torch.Tensor | None, n_k: int
    ) -> None:
        """Add the bias at ``rows x cols`` to ``s`` in place."""
        if self.diagonals is not None:
            d = self.diagonals[min(head, self.diagonals.shape[0] - 1)]
            at = _cols(cols, n_k, s.device)
            s.add_(d[at[None, :] - rows[:, None] + self.n_q - 1])
            return
        assert self.dense is not None
        part = self.dense[min(head, self.dense.shape[0] - 1)].index_select(0, rows)
        s.add_((part if cols is None else part.index_select(1, cols)).float())


@dataclass(frozen=True)
class Formula:
    """One attention call's formula, every head (see the module docstring).

    Attributes:
        scale: what ``q . k`` is multiplied by.
        softcap: ``c`` of ``c * tanh(s / c)`` on the scaled scores (Gemma 2); None: none.
        mask: which keys each query sees; None: every key.
        bias: added to the (soft-capped) scores; None: none.
        sinks: ``(1 | heads, 1 | n_q)`` float32 logits of a sink that joins each row's softmax
            (gpt-oss's ``s_aux``); None: none.
        cells: ``(n_q, n_k)`` of the call (the size of a pickled copy's mask).
    """

    scale: float = 1.0
    softcap: float | None = None
    mask: Mask | None = None
    bias: Bias | None = None
    sinks: torch.Tensor | None = None
    cells: tuple[int, int] = (0, 0)

    @property
    def plain(self) -> bool:
        """Only a scale and a mask: what SDPA computes."""
        return self.softcap is None and self.bias is None and self.sinks is None

    def logits_(
        self, s: torch.Tensor, head: int, rows: torch.Tensor, cols: torch.Tensor | None, n_k: int
    ) -> torch.Tensor:
        """Scaled scores ``s`` ``(len(rows), len(cols))`` made into the softmax's logits, in
        place: soft-capped, biased, masked."""
        if self.softcap is not None:
            s.div_(self.softcap).tanh_().mul_(self.softcap)
        if self.bias is not None:
            self.bias.add_(s, head, rows, cols, n_k)
        if self.mask is not None:
            self.mask.apply_(s, head, rows, cols, n_k)
        return s

    def sink(self, head: int, rows: torch.Tensor) -> torch.Tensor | None:
        """The sink's logit at each of ``rows`` (float32), or None."""
        if self.sinks is None:
            return None
        per_row = self.sinks[min(head, self.sinks.shape[0] - 1)].float()
        return per_row.expand(len(rows)) if per_row.numel() == 1 else per_row.index_select(0, rows)

    def to(self, device: torch.device | str) -> Formula:
        """The formula with its tensors on ``device`` (a predicate keeps its own)."""
        mask, bias = self.mask, self.bias
        if mask is not None and mask.dense is not None:
            mask = replace(mask, dense=mask.dense.to(device))
        if bias is not None:
            move = {k: getattr(bias, k) for k in ("diagonals", "dense")}
            bias = replace(bias, **{k: v.to(device) for k, v in move.items() if v is not None})
        sinks = None if self.sinks is None else self.sinks.to(device)
        return replace(self, mask=mask, bias=bias, sinks=sinks)

    def __getstate__(self) -> dict[str, Any]:
        """Host tensors, and a predicate (a closure) evaluated into a dense bool mask: a pickled
        copy needs no model and no transformers."""
        out = self.to("cpu")
        mask = out.mask
        if mask is not None and mask.predicate is not None:
            n_q, n_k = self.cells
            dense = mask.dense_allowed(n_q, n_k, torch.device("cpu"))
            mask = Mask(causal=mask.causal, n_q=mask.n_q, dense=dense)
        return {**out.__dict__, "mask": mask}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
