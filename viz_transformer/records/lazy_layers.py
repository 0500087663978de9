"""What each layer (each attention call) of a ``LazyPatterns`` is computed from: its queries, keys
and formula (``records.formula``) where the tiles compute its heads, or its weights as the model
computed them where they could not; fetched once per layer when the patterns are deferred."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from viz_transformer.records import tiles
from viz_transformer.records.formula import Formula
from viz_transformer.records.tiles import Array, Index

# layer -> (q, k, scale or the call's whole formula), or its whole weights, for every layer a
# deferred pass ran
Fetch = Callable[[int], dict[int, tuple[Array, Array, float | Formula] | torch.Tensor]]


class LayerInputs:
    """Per layer: queries ``[heads, q, d]`` and keys ``[kv_heads, k, d]`` (kept in a half
    dtype when given so, else float32, where they are or on ``device``) with the call's
    ``Formula``, or the layer's whole ``[heads, q, k]`` weights (float32, host). A deferred
    store (``fetch``) starts empty and fills a layer when it is first asked."""

    def __init__(
        self,
        queries: Sequence[Array | None],
        keys: Sequence[Array | None],
        formulas: Sequence[Formula],
        whole: dict[int, Array] | None = None,
        device: torch.device | str | None = None,
        fetch: Fetch | None = None,
    ):
        whole = whole or {}
        qs = [None if q is None else tiles.as_stored(q, device) for q in queries]
        at = next((q.device for q in qs if q is not None), device)
        self.q = qs
        self.k = [None if k is None else tiles.as_stored(k, at) for k in keys]
        self.whole = [
            None if i not in whole else tiles.as_float32(whole[i], "cpu") for i in range(len(qs))
        ]
        self.formula = list(formulas)
        self._fetch = fetch
        self._lock = threading.RLock()

    def shape(self) -> tuple[int, int, int, int]:
        """``[layers, heads, q, k]``, checked: every layer the same, key heads dividing heads."""
        shapes = {tuple(w.shape) for w in self.whole if w is not None}
        pairs = [
            (q, k) for q, k in zip(self.q, self.k, strict=True) if q is not None and k is not None
        ]
        shapes |= {(q.shape[0], q.shape[1], k.shape[1]) for q, k in pairs}
        bad = [
            (q.shape, k.shape)
            for q, k in pairs
            if q.shape[0] % k.shape[0] or q.shape[2:] != k.shape[2:]
        ]
        if len(shapes) != 1 or bad or len(self.fetched()) < len(self.q):
            raise ValueError(f"queries and keys {bad or sorted(shapes)} do not pair.")
        heads, n_q, n_k = shapes.pop()
        return len(self.q), heads, n_q, n_k

    def group(self) -> int:
        """Query heads per key head (grouped-query attention); 1 without queries."""
        pair = next(((q, k) for q, k in zip(self.q, self.k, strict=True) if q is not None), None)
        return 1 if pair is None or pair[1] is None else pair[0].shape[0] // pair[1].shape[0]

    def qk(self, layer: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The layer's queries and keys (None, None for a layer held whole), fetched once
        (under the lock: one fetch per layer)."""
        with self._lock:
            if self.q[layer] is None and self.whole[layer] is None:
                assert self._fetch is not None
                for i, got in self._fetch(layer).items():
                    if isinstance(got, torch.Tensor):  # a call held whole
                        self.whole[i] = tiles.as_float32(got, "cpu")
                        continue
                    q, k, scale = got
                    if self.q[i] is None:
                        q = self.q[i] = tiles.as_stored(q, None)
                        self.k[i] = tiles.as_stored(k, q.device)
                        self.formula[i] = (
                            scale if isinstance(scale, Formula) else Formula(float(scale))
                        )
                if self.q[layer] is None and self.whole[layer] is None:
                    raise RuntimeError(f"the model gave no queries and keys for layer {layer}.")
            return self.q[layer], self.k[layer]

    def fetched(self) -> list[int]:
        """Layers whose queries and keys (or whole weights) are already computed."""
        return [i for i in range(len(self.q)) if self.q[i] is not None or self.whole[i] is not None]

    def finite(self) -> bool:
        """Whether every query, key and held weight so far is finite (checked where they are)."""
        kept = [t for t in (*self.q, *self.k, *self.whole) if t is not None]
        return all(bool(torch.isfinite(t).all()) for t in kept)

    def first(self) -> torch.Tensor:
        """A layer's queries (fetching layer 0 if none is), or a whole layer's weights."""
        done = [i for i in self.fetched() if self.q[i] is not None]
        if done or not self.fetched():
            q = self.qk(done[0] if done else 0)[0]
            if q is not None:
                return q
        return self.whole[self.fetched()[0]]  # type: ignore[return-value]

    def head(
        self, layer: int, head: int, causal: bool, key_ok: torch.Tensor | None
    ) -> tiles.HeadQK:
        """One head of a computed layer, as the tiles read it."""
        q, k = self.qk(layer)
        assert q is not None and k is not None
        f = self.formula[layer]
        kv = head // (q.shape[0] // k.shape[0])
        return tiles.HeadQK(q[head], k[kv], causal, key_ok, f.scale, f, head)

    def held(self, layer: int, head: int, rows: Index, cols: Index) -> np.ndarray | None:
        """The weights at ``rows x cols`` of a layer held whole (None for a computed layer)."""
        self.qk(layer)
        w = self.whole[layer]
        if w is None:
            return None
        z = w[head].numpy()
        r = np.arange(z.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        c = np.arange(z.shape[1]) if cols is None else np.asarray(cols, dtype=np.int64).reshape(-1)
        return np.ascontiguousarray(z[np.ix_(r, c)], dtype=np.float32)

    def state(self) -> dict[str, Any]:
        """Every layer on the host (fetching what is not yet): a pickled copy needs no model."""
        pairs = [self.qk(layer) for layer in range(len(self.q))]
        host = [[None if t is None else t.float().cpu().numpy() for t in p] for p in pairs]
        return {
            "q": [p[0] for p in host],
            "k": [p[1] for p in host],
            "formulas": self.formula,
            "whole": {i: w.numpy() for i, w in enumerate(self.whole) if w is not None},
        }
