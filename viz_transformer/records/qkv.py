"""What the Q, K, V walkthrough reads of one attention kind of one input (``KindCapture``):
each layer's input, the projections' weights and what the forward pass computed. The model's
adapter fills it (``LoadedModel.qkv_run``), ``analysis.walkthrough`` reads it; nothing else is
needed to recompute one head step by step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from viz_transformer.records.kinds import AttentionKind

# the norm a block applies to its input before attention: none (post-norm, BERT), RMSNorm with a
# gain (Llama), LayerNorm with a gain and a bias (GPT-2)
PreNorm = Literal["none", "rms", "layer"]


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
        w_q, w_k, w_v, w_o: ``[L, d, d]``; b_q, b_k, b_v, b_o: ``[L, d]``.
        captured: ``"q"``, ``"k"``, ``"v"``, ``"scores"``, ``"pattern"``, ``"z"`` ->
            ``[L, h, T, .]`` what the hook points recorded, q before the 1/sqrt(d_k) scale and
            k with ``kv_heads`` heads (Hugging Face: ``"pattern"``, plus ``"q"``, ``"k"``
            after rotary positions and ``"z"`` where our attention function runs).
        resid: ``[L, Tq, d]`` each block's input before its pre-attention norm ``norm`` ("rms":
            RMSNorm, "layer": LayerNorm; gain ``weights["norm"]``, LayerNorm bias
            ``weights["norm_bias"]``, epsilon ``norm_eps``), None without one (post-norm).
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
    x_q: np.ndarray
    x_kv: np.ndarray
    embed: np.ndarray | None
    pos: np.ndarray | None
    weights: dict[str, np.ndarray]
    captured: dict[str, np.ndarray]
    resid: np.ndarray | None = None
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
        return any(self.weights[f"b_{p}"].any() for p in "qkvo")

    @property
    def d_k(self) -> int:
        return self.weights["w_q"].shape[-1] // self.n_heads

    def kv_head(self, head: int) -> int:
        """The key/value head query ``head`` reads (consecutive query heads share one)."""
        return head // (self.n_heads // self.kv_heads) if self.kv_heads else head
