"""Attention patterns of long inputs, computed one head at a time from captured queries and keys.

A trace of ``n`` tokens holds ``layers x heads x n x n`` weights per attention kind: 4.8 GB at
4,096 tokens for a BERT-size encoder. ``LazyPatterns`` keeps what is cheap instead, the queries
and the keys of every layer (``layers x heads x n x d_k``, in the model's dtype) on the model's
device, and computes a head's ``softmax(q k^T / sqrt(d_k))`` (Eq. 1, with the causal mask of
section 3.2.3 for decoder self-attention; scale and softmax in float32) there, in tiles, when a
figure asks for it; ``drawn`` gives a figure only the cells it draws. It indexes like the
``[layers, heads, q, k]`` array it stands for: ``p[layer, head]`` is one map, ``p[layer]`` one
layer's heads, ``np.asarray(p)`` everything (refused above ``settings.MAX_MATERIALISE`` weights,
with a message saying what to do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from viz_transformer import settings
from viz_transformer.records import tiles
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.formula import Formula
from viz_transformer.records.lazy_layers import Fetch, LayerInputs
from viz_transformer.records.tiles import Array, Index, Scale, block_reduce

__all__ = ["LazyPatterns", "block_reduce", "drawn", "fits_in_memory", "is_lazy"]

HEAD_CACHE_BYTES = 64 * 2**20  # recently computed heads kept per record (at least one)


class LazyPatterns:
    """``[layers, heads, q, k]`` attention weights, each head computed on demand.

    Queries and keys stay where they were made (the model's device, or the host for numpy
    arrays); a head's weights are computed there in tiles (``records.tiles``), and only what is
    asked leaves it, as CPU float32 numpy: some cells (``cells``), block maxima or means
    (``reduced``), or the whole head (``head``, ``p[layer, head]``).

    Args:
        queries: per layer ``[heads, q, d_k]`` queries, numpy or tensors; bfloat16 and float16
            tensors are kept so (half the memory), anything else as float32.
        keys: per layer ``[kv_heads, k, d_k]`` keys, kept as queries are; ``kv_heads``
            divides ``heads`` (grouped-query attention shares one key head among
            ``heads / kv_heads`` queries).
        causal: query ``i`` sees keys ``j <= i + (k - q)`` only (decoder self-attention).
        key_mask: ``(k,)`` bool, False for keys no query sees (padding); None: every key.
        device: where to keep and compute (None: where the tensors are; numpy: the CPU).
        scale: what ``q . k`` is multiplied by (1/sqrt(d_k), or the model's own scaling; 1 for
            queries already scaled), applied in float32 on each tile; one, or one per layer.
        formulas: per layer, the call's whole formula (``records.formula``: its scale, soft-cap,
            mask predicate, bias and sinks) instead of ``scale``.
        whole: layer -> its ``[heads, q, k]`` weights as the model computed them, for a call whose
            formula is not known (its queries and keys may then be None).
    """

    ndim = 4
    dtype = np.dtype(np.float32)
    tile: tuple[int, int] | None = None  # query rows x keys per tile; None: ``tiles.plan``

    def __init__(
        self,
        queries: Sequence[Array],
        keys: Sequence[Array],
        causal: bool,
        key_mask: Array | None = None,
        device: torch.device | str | None = None,
        scale: Scale = 1.0,
        formulas: Sequence[Formula] | None = None,
        whole: dict[int, Array] | None = None,
    ):
        if not queries or len(queries) != len(keys):
            raise ValueError(f"{len(queries)} query and {len(keys)} key layers; need one each.")
        if formulas is not None and len(formulas) != len(queries):
            raise ValueError(f"{len(formulas)} formulas for {len(queries)} layers; one per layer.")
        formulas = formulas or [Formula(s) for s in tiles.per_layer(scale, len(queries))]
        self._in = LayerInputs(queries, keys, formulas, whole, device)
        self._setup(self._in.shape(), causal, self._in.group(), key_mask)

    @classmethod
    def deferred(
        cls,
        shape: tuple[int, int, int, int],
        causal: bool,
        fetch: Fetch,
        group: int = 1,
        key_mask: Array | None = None,
    ) -> LazyPatterns:
        """Patterns whose queries and keys are computed only when a head of their layer is asked.

        ``fetch(layer)`` runs the model as far as ``layer`` and returns ``{layer: (q, k, scale)}``
        for every layer it passed (so layer 0 of a 4,096-token input costs one layer, not six); they
        stay on the device ``fetch`` made them on. Pickling fetches everything first, so a copy
        needs no model.
        """
        self = cls.__new__(cls)
        empty = [None] * shape[0]
        self._in = LayerInputs(empty, empty, [Formula()] * shape[0], fetch=fetch)
        self._setup(tuple(shape), causal, group, key_mask)  # type: ignore[arg-type]
        return self

    def _setup(
        self,
        shape: tuple[int, int, int, int],
        causal: bool,
        group: int,
        key_mask: Array | None,
    ) -> None:
        self.shape, self.causal, self._group = shape, causal, group
        if isinstance(key_mask, torch.Tensor):
            key_mask = key_mask.cpu().numpy()
        self._key_ok = None if key_mask is None else np.asarray(key_mask, dtype=bool)
        if self._key_ok is not None and self._key_ok.shape != (shape[3],):
            raise ValueError(f"key_mask has shape {self._key_ok.shape}; expected ({shape[3]},).")
        self._cache: BoundedCache[tuple[int, int], np.ndarray] = BoundedCache(
            max(1, shape[0] * shape[1]), weigh=lambda a: a.nbytes, budget=HEAD_CACHE_BYTES
        )

    def fetched_layers(self) -> list[int]:
        """Layers whose queries and keys (or whole weights) are already computed."""
        return self._in.fetched()

    def is_whole(self, layer: int) -> bool:
        """Whether ``layer``'s weights are held whole: a call whose formula the tiles do not
        know, kept as the model computed it."""
        self._in.qk(layer)
        return self._in.whole[layer] is not None

    def formula(self, layer: int) -> Formula:
        """What ``layer``'s heads compute (``records.formula``)."""
        self._in.qk(layer)
        return self._in.formula[layer]

    def has_sinks(self, layer: int) -> bool:
        """Whether ``layer``'s rows sum to 1 together with a sink's weight (``sink_weights``)."""
        return self.formula(layer).sinks is not None

    def finite(self) -> bool:
        """Whether every query and key computed so far is finite (checked where they are)."""
        return self._in.finite()

    @property
    def device(self) -> torch.device:
        """Where the queries and keys are kept and heads computed (fetches layer 0 if need be)."""
        return self._in.first().device

    @property
    def kept_dtype(self) -> torch.dtype:
        """The dtype queries and keys are kept in (the model's: bfloat16 for a bfloat16 model)."""
        return self._in.first().dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def nbytes(self) -> int:
        """What the whole array would take if materialised."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"LazyPatterns(shape={self.shape}, causal={self.causal})"

    def __getstate__(self) -> dict[str, Any]:  # pickled by st.cache_data: host arrays, no cache
        return {**self._in.state(), "causal": self.causal, "key_mask": self._key_ok}

    def __setstate__(self, state: dict[str, Any]) -> None:
        args = state["q"], state["k"], state["causal"], state.get("key_mask")
        more = {"formulas": state.get("formulas"), "whole": state.get("whole")}
        self.__init__(*args, scale=state.get("scale", 1.0), **more)  # type: ignore[misc]

    def _select(
        self, layer: int, head: int, rows: Index, cols: Index
    ) -> tuple[tiles.HeadQK, torch.Tensor, torch.Tensor | None]:
        """One head's inputs and the chosen rows and columns as index tensors on its device."""
        q = self._in.qk(layer)[0]
        assert q is not None
        ok = None if self._key_ok is None else torch.from_numpy(self._key_ok).to(q.device)
        one = self._in.head(layer, head, self.causal, ok)
        n_q, n_k = self.shape[2:]
        picked = tiles.positions(rows, n_q, "query")
        r = torch.arange(n_q, device=q.device) if picked is None else picked.to(q.device)
        c = tiles.positions(cols, n_k, "key")
        return one, r, None if c is None else c.to(q.device)

    def cells(self, layer: int, head: int, rows: Index = None, cols: Index = None) -> np.ndarray:
        """One head's weights at ``rows x cols`` (positions; None: all), computed from those rows
        only: a zoom window, a row for hover.

        Returns:
            float32 ``(len(rows), len(cols))`` on the host.
        """
        layer, head = range(self.shape[0])[layer], range(self.shape[1])[head]
        held = self._in.held(layer, head, rows, cols)
        if held is not None:
            return held
        one, r, c = self._select(layer, head, rows, cols)
        n_cols = self.shape[3] if c is None else len(c)
        out = torch.empty(len(r), n_cols, dtype=torch.float32, device="cpu")
        with torch.no_grad():
            tiles.cells_into(out, one, r, c, self.tile)
        return out.numpy()

    def sink_weights(self, layer: int, head: int, rows: Index = None) -> np.ndarray:
        """Each row's weight on the head's sink (zeros where the layer has none): with it, a
        row of ``cells`` sums to 1.

        Returns:
            float32 ``(len(rows),)`` on the host.
        """
        layer, head = range(self.shape[0])[layer], range(self.shape[1])[head]
        held = self._in.held(layer, head, rows, None)
        if held is not None:  # the model's own weights: what they lack of 1 is the sink's
            return np.clip(1.0 - held.sum(-1, dtype=np.float64), 0.0, 1.0).astype(np.float32)
        one, r, _ = self._select(layer, head, rows, None)
        with torch.no_grad():
            return tiles.sink_weights(one, r).cpu().numpy()

    def reduced(
        self,
        layer: int,
        head: int,
        size: int,
        how: str = "max",
        rows: Index = None,
        cols: Index = None,
    ) -> tuple[np.ndarray, int, int]:
        """``block_reduce`` of ``cells(layer, head, rows, cols)``, computed tile by tile where
        the queries and keys are: only the ``<= size x size`` blocks reach the host."""
        layer, head = range(self.shape[0])[layer], range(self.shape[1])[head]
        if self.is_whole(layer):
            return block_reduce(self.cells(layer, head, rows, cols), size, how)
        one, r, c = self._select(layer, head, rows, cols)
        n_cols = self.shape[3] if c is None else len(c)
        bq, bk = -(-len(r) // size), -(-n_cols // size)
        if bq == bk == 1:
            return self.cells(layer, head, rows, cols), 1, 1
        with torch.no_grad():
            out = tiles.blocks(one, r, c, (bq, bk), how, self.tile)
        return out.cpu().numpy(), bq, bk

    def head(self, layer: int, head: int) -> np.ndarray:
        """One head's ``[q, k]`` weights (read-only), rows summing to 1; refused above
        ``settings.MAX_MATERIALISE`` weights (``cells`` and ``reduced`` read any size)."""
        layer = range(self.shape[0])[layer]
        head = range(self.shape[1])[head]
        self._check_size(self.shape[2] * self.shape[3])
        return self._cache.get_or_make((layer, head), lambda: _read_only(self.cells(layer, head)))

    def heads(self, layer: int, heads: Sequence[int] | range | None = None) -> np.ndarray:
        """``[len(heads), q, k]`` weights of some heads of one layer (all when None)."""
        heads = range(self.shape[1]) if heads is None else heads
        self._check_size(len(heads) * self.shape[2] * self.shape[3])
        return np.stack([self.head(layer, h) for h in heads])

    def __getitem__(self, index: Any) -> np.ndarray:
        index = index if isinstance(index, tuple) else (index,)
        layer, rest = index[0], index[1:]
        if not isinstance(layer, (int, np.integer)):
            return self.materialise()[index]
        if not rest:
            return self.heads(int(layer))
        head, tail = rest[0], rest[1:]
        if isinstance(head, (int, np.integer)):
            out = self.head(int(layer), int(head))
        else:
            chosen = range(self.shape[1])[head] if isinstance(head, slice) else list(head)
            out = self.heads(int(layer), [int(h) for h in chosen])
            tail = (slice(None), *tail)
        return out[tail] if tail else out

    def materialise(self) -> np.ndarray:
        """The whole ``[layers, heads, q, k]`` array.

        Raises:
            ValueError: more than ``settings.MAX_MATERIALISE`` weights.
        """
        self._check_size(self.size)
        out = np.empty(self.shape, dtype=np.float32)
        for layer in range(self.shape[0]):
            for head in range(self.shape[1]):
                out[layer, head] = self.head(layer, head)
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.materialise()
        return arr if dtype is None else arr.astype(dtype)

    def _check_size(self, n: int) -> None:
        if n > settings.MAX_MATERIALISE:
            raise ValueError(
                f"{self.shape[2]:,} x {self.shape[3]:,} tokens: {n:,} weights at once would take "
                f"{n * 4 / 2**30:.1f} GB. Read a window of rows and columns or block maxima "
                "(cells, reduced: what the maps draw), or shorten the input."
            )


def drawn(
    arr: np.ndarray | LazyPatterns,
    layer: int,
    head: int,
    rows: np.ndarray,
    cols: np.ndarray,
    limit: int | None = None,
    how: str = "max",
) -> tuple[np.ndarray, int, int]:
    """One head's weights at ``rows x cols`` (positions), as block maxima or means (``how``)
    when a side is longer than ``limit``: what a figure draws, on the host. A lazy head is
    computed where its queries and keys are and never made whole.

    Returns:
        the map and its block height and width (1, 1 at full resolution).
    """
    if isinstance(arr, LazyPatterns):
        if limit is not None and max(len(rows), len(cols)) > limit:
            return arr.reduced(layer, head, limit, how, rows, cols)
        return arr.cells(layer, head, rows, cols), 1, 1
    z = arr[layer, head]
    if (len(rows), len(cols)) != z.shape:
        z = z[np.ix_(rows, cols)]
    if limit is not None and max(z.shape) > limit:
        return block_reduce(z, limit, how)
    return z, 1, 1


def is_lazy(arr: object) -> bool:
    """True for patterns computed per head (long inputs)."""
    return isinstance(arr, LazyPatterns)


def fits_in_memory(arr: np.ndarray | LazyPatterns) -> bool:
    """True when every weight of ``arr`` may be held at once (``settings.MAX_MATERIALISE``)."""
    return not is_lazy(arr) or arr.size <= settings.MAX_MATERIALISE


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
