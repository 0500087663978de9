"""What the Q, K, V walkthrough reads of one attention kind of one input (``KindCapture``):
each layer's input, the projections' weights and what the forward pass computed. The model's
adapter fills it (``LoadedModel.qkv_run``), ``analysis.walkthrough`` reads it; nothing else is
needed to recompute one head step by step."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from viz_transformer.records.kinds import AttentionKind

# the norm a block applies to its input before attention: none (post-norm, BERT), RMSNorm with a
# gain (Llama), LayerNorm with a gain and a bias (GPT-2)
PreNorm = Literal["none", "rms", "layer"]
# x: what a layer's attention reads (x_q, x_kv); resid: a block's input before its norm; final:
# the last block's output; pattern: the weights, through eager attention (asked only by name)
POINTS = frozenset({"q", "k", "v", "scores", "pattern", "z", "x", "resid", "final"})
ROWS = frozenset({"resid", "z"})  # the points ``Needs.rows`` narrows to some positions


@dataclass(frozen=True)
class Needs:
    """What an analysis reads of a ``KindCapture`` (as TransformerLens' ``names_filter``): the
    points of ``captured`` it reads, each at some layers (None: every layer), and for ``resid``
    and ``z`` the positions it reads (``rows``; None: every position). The default reads every
    point but the pattern at every layer (a small model's whole record); the walkthrough of a
    layer (``walkthrough.reads``), a score split (``why.reads``) and a head's writes ask one
    layer, and earlier layers at two positions, so that what a pass keeps does not grow with the
    layers, and no eager attention builds a ``heads x T x T`` array nobody reads."""

    layers: Mapping[str, frozenset[int] | None] = field(
        default_factory=lambda: dict.fromkeys(POINTS - {"pattern"})
    )
    rows: frozenset[int] | None = None

    @classmethod
    def at(cls, layers: Iterable[int], *points: str) -> Needs:
        """``points`` at ``layers`` and nothing else."""
        return cls(dict.fromkeys(points, frozenset(layers)))

    def keeps(self, point: str, layer: int) -> bool:
        if point not in self.layers:
            return False
        at = self.layers[point]
        return at is None or layer in at

    def rows_of(self, point: str) -> frozenset[int] | None:
        """The positions kept of ``point`` (None: every one)."""
        return self.rows if point in ROWS else None


def _host(t: Any) -> np.ndarray:
    """float32 numpy on the CPU of a tensor kept in the model's dtype (an array as it is)."""
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", torch.float32).numpy()
    return t


class Layers:
    """A captured point kept at some layers only (``Needs.layers``), indexed as the ``[L, ...]``
    array it stands for (``shape``: that array's); asking a layer that was not kept raises
    ``ValueError``. A layer may be kept as a tensor in the model's dtype (half the memory of
    float32 for a bfloat16 model) on the model's device: what is indexed comes back as float32
    numpy on the CPU. Where only some positions were kept (``positions``, along the
    second-to-last axis: ``Needs.rows``), read them with ``rows_of``; indexing refuses."""

    def __init__(
        self,
        arrays: dict[int, Any],
        n_layers: int,
        rest: tuple[int, ...] = (),
        positions: Sequence[int] | None = None,
    ):
        self.arrays, self.n_layers = arrays, n_layers
        self.positions = None if positions is None else [int(p) for p in positions]
        first = next(iter(arrays.values()), None)
        self.shape = (n_layers, *(rest if first is None else tuple(first.shape)))

    def _layer(self, layer: int) -> Any:
        layer = range(self.n_layers)[layer]
        if layer not in self.arrays:
            kept = ", ".join(map(str, sorted(self.arrays))) or "none"
            raise ValueError(f"layer {layer} was not captured in this run (kept: {kept}).")
        return self.arrays[layer]

    def __getitem__(self, index: Any) -> np.ndarray:
        layer, rest = (index[0], index[1:]) if isinstance(index, tuple) else (index, ())
        arr = self._layer(layer)
        if self.positions is not None:
            raise ValueError(
                f"only positions {self.positions} were captured in this run: read them with "
                "rows_of."
            )
        return _host(arr[rest] if rest else arr)

    def rows(self, layer: int, positions: Sequence[int]) -> np.ndarray:
        """``[..., len(positions), last]`` of ``layer`` at ``positions``, float32 numpy."""
        arr = self._layer(layer)
        if self.positions is None:
            return _host(arr[..., list(positions), :])
        index = {p: i for i, p in enumerate(self.positions)}
        missing = [int(p) for p in positions if int(p) not in index]
        if missing:
            raise ValueError(
                f"position {missing[0]} was not captured in this run (kept: {self.positions})."
            )
        return _host(arr[..., [index[int(p)] for p in positions], :])


def rows_of(a: np.ndarray | Layers, layer: int, positions: Sequence[int]) -> np.ndarray:
    """``a[layer][..., positions, :]`` as float32 numpy, whether ``a`` is a whole ``[L, ...]``
    array or a ``Layers`` kept at some layers and positions."""
    if isinstance(a, Layers):
        return a.rows(layer, positions)
    return np.asarray(a[layer])[..., list(positions), :]


class LayerWeights:
    """One projection's ``[L, d_in, d_out]`` weights (or ``[L, d]`` biases and gains) read from
    the model a layer at a time when indexed, as float32 numpy: nothing is stacked or kept
    (every layer of Llama 3 8B in float32 would take 5 GiB per capture).

    Args:
        fetch: layer -> that layer's tensor (a view of the model's parameter).
        n_layers: layers; shape: one layer's shape.
    """

    def __init__(self, fetch: Callable[[int], Any], n_layers: int, shape: tuple[int, ...]):
        self.fetch, self.n_layers = fetch, n_layers
        self.shape = (n_layers, *shape)

    def __getitem__(self, index: Any) -> np.ndarray:
        layer, rest = (index[0], index[1:]) if isinstance(index, tuple) else (index, ())
        out = _host(self.fetch(range(self.n_layers)[layer])).view()
        out.flags.writeable = False  # a float32 model's weights are shared, never copied
        return out[rest] if rest else out


@dataclass(frozen=True)
class KindCapture:
    """One attention kind of one input, every layer, as the Q, K, V walkthrough reads it;
    float32 numpy, batch dimension removed. Every family's adapter fills it
    (``LoadedModel.qkv_run``): our own networks from their hook points, a Hugging Face model
    from its blocks, norms and projections.

    Weights follow the maths, ``q = x @ w_q + b_q`` (the transpose of ``nn.Linear.weight``).

    Attributes:
        query_tokens, key_tokens: labels of the ``Tq`` query and ``Tk`` key positions.
        x_q: ``[L, Tq, d]`` input of each layer's attention at the query positions.
        x_kv: ``[L, Tk, d]`` the vectors keys and values are made from (the encoder output for
            cross-attention, else ``x_q``).
        embed, pos: ``[Tq, d]`` sqrt(d_model) * embedding and the positional encoding, the two
            parts of layer 0's input (section 3.4, 3.5); None for cross-attention.
        w_q, w_k, w_v, w_o: ``[L, d, d]``; b_q, b_k, b_v, b_o: ``[L, d]``; arrays, or
            ``LayerWeights`` read from the model a layer at a time.
        captured: ``"q"``, ``"k"``, ``"v"``, ``"scores"``, ``"pattern"``, ``"z"`` ->
            ``[L, h, T, .]`` what the hook points recorded, q before the 1/sqrt(d_k) scale and
            k with ``kv_heads`` heads (Hugging Face: ``"pattern"``, plus ``"q"``, ``"k"``
            after rotary positions and ``"z"`` where our attention function runs); ``Layers``
            where the capture kept some layers only (``Needs``).
        resid: ``[L, Tq, d]`` each block's input before its pre-attention norm ``norm`` ("rms":
            RMSNorm, "layer": LayerNorm; gain ``weights["norm"]``, LayerNorm bias
            ``weights["norm_bias"]``, epsilon ``norm_eps``), None without one (post-norm); a
            ``Layers`` of some positions where the capture kept only those (read: ``rows_of``).
        rotary: cos, sin ``[T, d_head]`` rotating q and k (RoPE), None without.
        kv_heads: key/value heads; fewer than ``n_heads`` is grouped-query attention.
        final: ``[Tq, d]`` the last block's output, what a pre-norm decoder's final norm reads;
            None otherwise.
        inputs: ``[Tq, d]`` token and position parts of layer 0's block input ``resid[0]`` of a
            pre-norm model with added positions (GPT-2); None otherwise.
    """

    model_name: str
    kind: AttentionKind
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    n_heads: int
    scaled: bool
    x_q: np.ndarray | Layers
    x_kv: np.ndarray | Layers
    embed: np.ndarray | None
    pos: np.ndarray | None
    weights: dict[str, np.ndarray | LayerWeights]
    captured: dict[str, np.ndarray | Layers]
    resid: np.ndarray | Layers | None = None
    norm_eps: float = 0.0
    rotary: tuple[np.ndarray, np.ndarray] | None = None
    kv_heads: int = 0  # 0: one per query head
    norm: PreNorm = "none"
    final: np.ndarray | None = None
    inputs: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_layers(self) -> int:
        return self.x_q.shape[0]

    @property
    def biased(self) -> bool:
        """Whether any projection adds a bias (the paper's Eq. 1 has none; Llama adds none,
        BERT and GPT-2 do)."""
        return any(self.weights[f"b_{p}"][i].any() for p in "qkvo" for i in range(self.n_layers))

    @property
    def d_k(self) -> int:
        return self.weights["w_q"].shape[-1] // self.n_heads

    def check(self, layer: int, head: int, **positions: int) -> None:
        """Raise a ValueError naming the first of ``layer``, ``head`` and ``positions`` that
        does not exist, with the range to choose from: the one range check of every analysis of
        this record. ``positions``: ``position`` or ``query`` (among the query tokens), ``key``
        (among the key tokens)."""
        n = {"position": len(self.query_tokens), "query": len(self.query_tokens)}
        n["key"] = len(self.key_tokens)
        bounds = [("layer", layer, self.n_layers), ("head", head, self.n_heads)]
        bounds += [(what, value, n[what]) for what, value in positions.items()]
        for what, value, upper in bounds:
            if not 0 <= value < upper:
                raise ValueError(f"{what} {value} does not exist: choose 0 to {upper - 1}.")

    def kv_head(self, head: int) -> int:
        """The key/value head query ``head`` reads (consecutive query heads share one)."""
        return head // (self.n_heads // self.kv_heads) if self.kv_heads else head
