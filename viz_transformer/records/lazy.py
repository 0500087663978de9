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

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from viz_transformer import settings
from viz_transformer.records import tiles
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.tiles import Array, Index, Scale, block_reduce

__all__ = ["LazyPatterns", "block_reduce", "drawn", "fits_in_memory", "is_lazy"]

HEAD_CACHE_BYTES = 64 * 2**20  # recently computed heads kept per record (at least one)
Fetch = Callable[[int], dict[int, tuple[Array, Array, float]]]  # layer -> (q, k, scale)


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
    ):
        if not queries or len(queries) != len(keys):
            raise ValueError(f"{len(queries)} query and {len(keys)} key layers; need one each.")
        qs = [tiles.as_stored(q, device) for q in queries]
        ks = [tiles.as_stored(k, qs[0].device) for k in keys]
        (heads, n_q, _), (kv_heads, n_k, _) = qs[0].shape, ks[0].shape
        if heads % kv_heads or any(q.shape != qs[0].shape for q in qs):
            raise ValueError(f"queries {qs[0].shape} and keys {ks[0].shape} do not pair.")
        self._q: list[torch.Tensor | None] = list(qs)
        self._k: list[torch.Tensor | None] = list(ks)
        shape = (len(self._q), heads, n_q, n_k)
        self._setup(shape, causal, heads // kv_heads, None, key_mask)
        self._scale = tiles.per_layer(scale, len(qs))

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
        self._q, self._k = [None] * shape[0], [None] * shape[0]
        self._scale = [1.0] * shape[0]
        self._setup(tuple(shape), causal, group, fetch, key_mask)  # type: ignore[arg-type]
        return self

    def _setup(
        self,
        shape: tuple[int, int, int, int],
        causal: bool,
        group: int,
        fetch: Fetch | None,
        key_mask: Array | None,
    ) -> None:
        self.shape, self.causal, self._group, self._fetch = shape, causal, group, fetch
        if isinstance(key_mask, torch.Tensor):
            key_mask = key_mask.cpu().numpy()
        self._key_ok = None if key_mask is None else np.asarray(key_mask, dtype=bool)
        if self._key_ok is not None and self._key_ok.shape != (shape[3],):
            raise ValueError(f"key_mask has shape {self._key_ok.shape}; expected ({shape[3]},).")
        self._cache: BoundedCache[tuple[int, int], np.ndarray] = BoundedCache(
            max(1, shape[0] * shape[1]), weigh=lambda a: a.nbytes, budget=HEAD_CACHE_BYTES
        )
        self._lock = threading.RLock()

    def _qk(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The layer's queries and keys, fetched once (under the lock: one fetch per layer)."""
        with self._lock:
            if self._q[layer] is None:
                assert self._fetch is not None
                for i, (q, k, scale) in self._fetch(layer).items():
                    if self._q[i] is None:
                        q = self._q[i] = tiles.as_stored(q, None)
                        self._k[i], self._scale[i] = tiles.as_stored(k, q.device), float(scale)
                if self._q[layer] is None:
                    raise RuntimeError(f"the model gave no queries and keys for layer {layer}.")
            return self._q[layer], self._k[layer]  # type: ignore[return-value]

    def fetched_layers(self) -> list[int]:
        """Layers whose queries and keys are already computed."""
        return [i for i, q in enumerate(self._q) if q is not None]

    def finite(self) -> bool:
        """Whether every query and key computed so far is finite (checked where they are)."""
        kept = [t for t in (*self._q, *self._k) if t is not None]
        return all(bool(torch.isfinite(t).all()) for t in kept)

    @property
    def device(self) -> torch.device:
        """Where the queries and keys are kept and heads computed (fetches layer 0 if need be)."""
        return self._qk(self.fetched_layers()[0] if self.fetched_layers() else 0)[0].device

    @property
    def kept_dtype(self) -> torch.dtype:
        """The dtype queries and keys are kept in (the model's: bfloat16 for a bfloat16 model)."""
        return self._qk(self.fetched_layers()[0] if self.fetched_layers() else 0)[0].dtype

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
        pairs = [self._qk(layer) for layer in range(self.shape[0])]
        q, k = ([t.float().cpu().numpy() for t in ts] for ts in zip(*pairs, strict=True))
        return {
            "q": q,
            "k": k,
            "causal": self.causal,
            "key_mask": self._key_ok,
            "scale": self._scale,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        args = state["q"], state["k"], state["causal"], state.get("key_mask")
        self.__init__(*args, scale=state.get("scale", 1.0))  # type: ignore[misc]

    def _select(
        self, layer: int, head: int, rows: Index, cols: Index
    ) -> tuple[tiles.HeadQK, torch.Tensor, torch.Tensor | None]:
        """One head's inputs and the chosen rows and columns as index tensors on its device."""
        layer, head = range(self.shape[0])[layer], range(self.shape[1])[head]
        q, k = self._qk(layer)
        ok = None
        if self._key_ok is not None:
            ok = torch.from_numpy(self._key_ok).to(q.device)
        one = tiles.HeadQK(q[head], k[head // self._group], self.causal, ok, self._scale[layer])
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
        one, r, c = self._select(layer, head, rows, cols)
        n_cols = self.shape[3] if c is None else len(c)
        out = torch.empty(len(r), n_cols, dtype=torch.float32, device="cpu")
        with torch.no_grad():
            tiles.cells_into(out, one, r, c, self.tile)
        return out.numpy()

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
