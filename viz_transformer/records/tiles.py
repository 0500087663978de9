"""One head's ``softmax(q k^T)`` computed in tiles on the device that holds its queries and keys.

A head of ``n`` tokens has ``n x n`` weights: 4 GB of float32 at 32,768 tokens. Nothing here makes
them whole. Queries go in tiles of rows; each row's softmax runs over every key, in one pass when a
tile of whole rows fits ``TILE_CELLS``, else in two: each row's max and sum over the keys chunk by
chunk (an online log-sum-exp), then the chunks normalised with it. What leaves the device is what
a figure draws: chosen cells, or block maxima or means of the map.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from viz_transformer.records.formula import Formula

Array = np.ndarray | torch.Tensor
Index = np.ndarray | Sequence[int] | None  # positions in a map's rows or columns; None: all
Scale = float | Sequence[float]  # what q . k is multiplied by: one for all layers, or per layer
# float32 cells of one tile: a few MB on the CPU (caches), more on a GPU (fewer kernel launches)
TILE_CELLS = {"cpu": 2**22, "gpu": 2**26}


@dataclass(frozen=True)
class HeadQK:
    """One head's inputs, on one device.

    Attributes:
        q: ``(n_q, d)`` queries; k: ``(n_k, d)`` keys; float32, or bfloat16 / float16 as a
            half-precision model gave them (scores are float32 either way).
        causal: query ``i`` sees keys ``j <= i + (n_k - n_q)`` only.
        key_ok: ``(n_k,)`` bool, False for keys no query sees (padding); None: every key.
        scale: what ``q . k`` is multiplied by (the model's 1/sqrt(d_k)), in float32 on each
            tile, so that half-precision queries are never rounded once more by it.
        formula: the rest of the call's formula (soft-cap, mask predicate, bias, sink:
            ``records.formula``), read at head ``head``; None: plain.
    """

    q: torch.Tensor
    k: torch.Tensor
    causal: bool = False
    key_ok: torch.Tensor | None = None
    scale: float = 1.0
    formula: Formula | None = None
    head: int = 0

    def scores(
        self, rows: torch.Tensor, cols: torch.Tensor | None, out: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The softmax's logits (masked, scaled ``q k^T`` and the rest of ``formula``) of query
        positions ``rows`` and key positions ``cols`` (None: every key), ``(len(rows),
        len(cols))``, written into ``out`` when given; masked cells are ``-inf``."""
        keys = self.k if cols is None else self.k.index_select(0, cols)
        # bfloat16 / float16 queries and keys (a model run in half precision) are kept so, half
        # the memory of float32, and taken to float32 a tile at a time: scores and softmax are
        # float32 whatever the model ran in
        q = self.q.index_select(0, rows).float()
        if self.scale != 1.0:  # in float32, on the tile's rows x d (not its rows x keys)
            q = q.mul_(self.scale)
        s = torch.matmul(q, keys.T.float(), out=out)
        if self.formula is not None:
            self.formula.logits_(s, self.head, rows, cols, self.k.shape[0])
        if self.causal:
            n_q, n_k = self.q.shape[0], self.k.shape[0]
            at = torch.arange(n_k, device=s.device) if cols is None else cols
            s.masked_fill_(at[None, :] > rows[:, None] + (n_k - n_q), -math.inf)
        if self.key_ok is not None:
            ok = self.key_ok if cols is None else self.key_ok.index_select(0, cols)
            s.masked_fill_(~ok[None, :], -math.inf)
        return s

    def sink(self, rows: torch.Tensor) -> torch.Tensor | None:
        """The sink's logit at each of ``rows``, or None (no sink)."""
        return None if self.formula is None else self.formula.sink(self.head, rows)


def plan(
    n_k: int,
    device: torch.device,
    block: tuple[int, int] = (1, 1),
    tile: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """Query rows and keys per tile, multiples of the block's sides so that no block straddles
    two tiles; about ``TILE_CELLS`` cells unless ``tile`` asks for a size.

    Returns:
        ``(rows, keys)``; ``keys >= n_k`` means whole rows (one pass).
    """
    bq, bk = block
    if tile is None:
        cells = TILE_CELLS["cpu" if device.type == "cpu" else "gpu"]
        keys = n_k if bq * n_k <= cells else max(bk, cells // bq)
        rows = max(1, cells // max(1, min(keys, n_k)))
    else:
        rows, keys = tile
    return -(-max(1, rows) // bq) * bq, -(-max(1, keys) // bk) * bk


def as_stored(x: Array, device: torch.device | str | None) -> torch.Tensor:
    """``x`` as a tensor on ``device`` to keep queries or keys in: bfloat16 and float16 tensors
    stay so (``HeadQK.scores`` takes each tile to float32), anything else is float32. A tensor
    that owns its whole buffer is kept as it is, strided or not (Llama's queries after RoPE are
    ``(heads, n, d)`` over an ``(n, heads, d)`` buffer: a contiguous copy beside the original
    held both, every layer's, until the trace was built); a view into a larger buffer (GPT-2's
    q of its fused q|k|v) is copied so that it does not keep the rest alive."""
    if isinstance(x, torch.Tensor) and x.dtype in (torch.bfloat16, torch.float16):
        return _own(x.detach().to(device=device or x.device))
    return as_float32(x, device)


def _own(x: torch.Tensor) -> torch.Tensor:
    """``x``, or a contiguous copy where it is a part of a larger buffer."""
    whole = x.storage_offset() == 0 and x.untyped_storage().nbytes() == x.nbytes
    return x if whole else x.contiguous()


def as_float32(x: Array, device: torch.device | str | None) -> torch.Tensor:
    """``x`` as a float32 tensor on ``device`` (None: where a tensor is, else the CPU), copied
    only where it must be (another dtype or device, or a part of a larger buffer: ``as_stored``)."""
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(np.ascontiguousarray(x, np.float32)).to(device or "cpu")
    return _own(x.detach().to(device=device or x.device, dtype=torch.float32))


def positions(index: Index, n: int, what: str) -> torch.Tensor | None:
    """``index`` as a CPU int64 tensor of positions below ``n``; None when it is every position
    in order. Checked here: a bad index on a GPU would stop the device, not raise."""
    if index is None:
        return None
    at = np.ascontiguousarray(index, dtype=np.int64).reshape(-1)
    if len(at) == n and np.array_equal(at, np.arange(n)):
        return None
    if len(at) and (at.min() < 0 or at.max() >= n):
        raise IndexError(f"{what} positions {at.min()}..{at.max()} lie outside 0..{n - 1}.")
    return torch.from_numpy(at).to("cpu")


def _chunk(start: int, step: int, n: int, device: torch.device) -> torch.Tensor:
    return torch.arange(start, min(start + step, n), device=device)


def _scratch(rows: int, cols: int, device: torch.device) -> Callable[[int, int], torch.Tensor]:
    """``view(r, c)``: an ``(r, c)`` tensor in one buffer made once, so that tiles reuse memory
    (a fresh 16 MB tile per step let the CPU process's memory grow by a tile per head)."""
    buf = torch.empty(rows * cols, device=device)
    return lambda r, c: buf[: r * c].view(r, c)


def log_sum_exp(head: HeadQK, rows: torch.Tensor, step: int, sink: bool = True) -> torch.Tensor:
    """Each row's ``log sum_j exp(score_j)`` over every key and, with ``sink``, the head's sink
    logit, ``step`` keys at a time (``-inf`` for a row that sees nothing)."""
    n_k = head.k.shape[0]
    top = torch.full((len(rows),), -math.inf, device=rows.device)
    total = torch.zeros(len(rows), device=rows.device)
    view = _scratch(len(rows), min(step, n_k), rows.device)
    for c0 in range(0, n_k, step):
        at = _chunk(c0, step, n_k, rows.device)
        s = head.scores(rows, at, view(len(rows), len(at)))
        new = torch.maximum(top, s.amax(-1))
        shift = torch.where(torch.isinf(new), 0.0, new)  # rows that saw no key yet stay at 0
        total = total * torch.exp(top - shift) + s.sub_(shift[:, None]).exp_().sum(-1)
        top = new
    lse = top + torch.log(total)
    logit = head.sink(rows) if sink else None
    return lse if logit is None else torch.logaddexp(lse, logit)


def sink_weights(head: HeadQK, rows: torch.Tensor, step: int | None = None) -> torch.Tensor:
    """Each row's weight on the head's sink (``(len(rows),)``; zeros without a sink): what the
    row's weights on the keys lack of 1."""
    logit = head.sink(rows)
    if logit is None:
        return torch.zeros(len(rows), device=rows.device)
    lse = log_sum_exp(head, rows, step or plan(head.k.shape[0], rows.device)[1], sink=False)
    return torch.sigmoid(logit - lse)


def _softmax_(s: torch.Tensor, sink: torch.Tensor | None) -> torch.Tensor:
    """Softmax of each row of ``s`` in place; a sink logit per row joins the normaliser."""
    top = s.amax(-1, keepdim=True)
    if sink is not None:
        top = torch.maximum(top, sink[:, None])
    s.sub_(top).exp_()
    total = s.sum(-1, keepdim=True)
    if sink is not None:
        total = total + (sink[:, None] - top).exp()
    return s.div_(total)


def each_tile(
    head: HeadQK, rows: torch.Tensor, cols: torch.Tensor | None, step: tuple[int, int]
) -> Iterator[tuple[int, int, torch.Tensor]]:
    """The weights at ``rows x cols`` (positions; ``cols`` None: every key), tile by tile; a
    tile is valid until the next one is asked for (they share one buffer).

    Yields:
        the tile's first index into ``rows`` and into ``cols``, and its weights ``(r, c)``.
    """
    n_k = head.k.shape[0]
    n_cols = n_k if cols is None else len(cols)
    row_step, key_step = step
    view = _scratch(min(row_step, len(rows)), min(key_step, n_k), rows.device)
    for r0 in range(0, len(rows), row_step):
        r = rows[r0 : r0 + row_step]
        if key_step >= n_k:  # whole rows fit: softmax in one pass, in place
            w = _softmax_(head.scores(r, None, view(len(r), n_k)), head.sink(r))
            yield r0, 0, (w if cols is None else w.index_select(1, cols))
            continue
        lse = log_sum_exp(head, r, key_step)[:, None]
        for c0 in range(0, n_cols, key_step):
            c = _chunk(c0, key_step, n_k, r.device) if cols is None else cols[c0 : c0 + key_step]
            yield r0, c0, head.scores(r, c, view(len(r), len(c))).sub_(lse).exp_()


def cells_into(
    out: torch.Tensor,
    head: HeadQK,
    rows: torch.Tensor,
    cols: torch.Tensor | None,
    tile: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Write the weights at ``rows x cols`` into ``out`` ``(len(rows), len(cols))``, which may
    live on another device (the host): each tile is copied as it is made."""
    step = plan(head.k.shape[0], rows.device, tile=tile)
    for r0, c0, w in each_tile(head, rows, cols, step):
        out[r0 : r0 + w.shape[0], c0 : c0 + w.shape[1]].copy_(w)
    return out


def blocks(
    head: HeadQK,
    rows: torch.Tensor,
    cols: torch.Tensor | None,
    block: tuple[int, int],
    how: str = "max",
    tile: tuple[int, int] | None = None,
) -> torch.Tensor:
    """Block maxima or means (``how``) of the weights at ``rows x cols``, blocks of ``block``
    cells (edge blocks hold fewer; a mean is over the cells a block holds), on the device.

    Returns:
        ``(ceil(len(rows) / bq), ceil(len(cols) / bk))``.
    """
    bq, bk = block
    n_cols = head.k.shape[0] if cols is None else len(cols)
    out = torch.empty(-(-len(rows) // bq), -(-n_cols // bk), device=rows.device)
    pool = F.max_pool2d if how == "max" else F.avg_pool2d
    for r0, c0, w in each_tile(head, rows, cols, plan(head.k.shape[0], rows.device, block, tile)):
        small = pool(w[None, None], kernel_size=block, ceil_mode=True)[0, 0]
        i, j = r0 // bq, c0 // bk
        out[i : i + small.shape[0], j : j + small.shape[1]] = small
    return out


def per_layer(scale: Scale, layers: int) -> list[float]:
    """``scale`` (one, or one per layer) as one float per layer."""
    if isinstance(scale, (int, float)):
        return [float(scale)] * layers
    if len(scale) != layers:
        raise ValueError(f"{len(scale)} scales for {layers} layers; give one, or one per layer.")
    return [float(s) for s in scale]


def block_reduce(z: np.ndarray, size: int, how: str = "max") -> tuple[np.ndarray, int, int]:
    """Downsample a finite ``[q, k]`` map to at most ``size x size`` cells by block max or mean.

    Edge blocks may be smaller (their mean is over the cells they hold). Masked cells should be
    blanked after reducing, not before: NaN would spread to the whole block.

    Returns:
        the reduced map and the block height and width (1 when that side already fits).
    """
    n_q, n_k = z.shape
    bq, bk = -(-n_q // size), -(-n_k // size)  # ceil
    if bq == bk == 1:
        return z, 1, 1
    with warnings.catch_warnings():  # a read-only head is only read here
        warnings.simplefilter("ignore", UserWarning)
        t = torch.from_numpy(np.ascontiguousarray(z, dtype=np.float32))[None, None]
    pool = F.max_pool2d if how == "max" else F.avg_pool2d
    with torch.no_grad():
        out = pool(t, kernel_size=(bq, bk), ceil_mode=True)
    return out[0, 0].numpy(), bq, bk
