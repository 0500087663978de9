"""The Bergamot "tiny" Marian network's parts: config, Marian's positions, attention, FFN and SSRU.

Attention uses an explicit softmax (never SDPA) so every weight can be read at ``hook_pattern``;
the SSRU is the recurrent unit that replaces the decoder's masked self-attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from viz_transformer.networks.hooks import HookPoint


@dataclass(frozen=True)
class BergamotConfig:
    """Sizes of a Bergamot student; the defaults are the wheel's "tiny" models."""

    vocab_size: int = 32000  # one SentencePiece vocabulary for source and target
    d_model: int = 256  # residual-stream width
    n_heads: int = 8  # d_k = d_model / n_heads = 32
    d_ff: int = 1536  # FFN inner width (ReLU)
    n_encoder_layers: int = 6
    n_decoder_layers: int = 2
    eps: float = 1e-6  # Marian's LayerNorm epsilon
    eos_id: int = 0  # ``</s>``; the vocabulary has no BOS


POSITIONS = 1024  # positions tabulated once: 256 source tokens, 2.5 outputs per token


def marian_positions(start: int, length: int, d_model: int, device: torch.device) -> torch.Tensor:
    """Marian's sinusoidal encoding: all sines, then all cosines (section 3.5, split layout).

    Frequencies are ``exp(-i * log(10000) / (d_model/2 - 1))``, not the paper's
    ``10000^(-2i/d_model)``: Marian spaces them so the last one is exactly 1/10000.

    Returns:
        float32 ``(length, d_model)`` for positions ``start .. start + length - 1``.
    """
    half = d_model // 2
    inv_freq = torch.exp(torch.arange(half, device=device) * -(math.log(10000.0) / (half - 1)))
    angles = torch.arange(start, start + length, device=device)[:, None] * inv_freq  # (T, d/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)  # (T, d)


class Attention(nn.Module):
    """MultiHead(Q, K, V) (section 3.2.2); K and V are projected apart so decoding reuses them."""

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.h, self.d_k = cfg.n_heads, cfg.d_model // cfg.n_heads
        d = cfg.d_model
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d, d) for _ in range(4))
        self.hook_q = HookPoint()  # (B, h, Tq, d_k)
        self.hook_k = HookPoint()  # (B, h, Tk, d_k)
        self.hook_v = HookPoint()  # (B, h, Tk, d_k)
        self.hook_scores = HookPoint()  # (B, h, Tq, Tk), already divided by sqrt(d_k)
        self.hook_pattern = HookPoint()  # (B, h, Tq, Tk), softmax of the scores
        self.hook_z = HookPoint()  # (B, h, Tq, d_k), pattern @ v before W^O
        # sqrt(d_k) as a float32 tensor: dividing by it gives the same numbers as by the Python
        # float, without wrapping and converting a scalar at every call (~5 us a decoding step)
        root = torch.tensor(math.sqrt(self.d_k), device=self.W_q.weight.device)
        self.register_buffer("sqrt_d_k", root, persistent=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def project_kv(self, x_kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values ``(B, h, Tk, d_k)`` of ``x_kv (B, Tk, d)``."""
        return self.hook_k(self._split(self.W_k(x_kv))), self.hook_v(self._split(self.W_v(x_kv)))

    def self_attend(self, x: torch.Tensor) -> torch.Tensor:
        """Self-attention of ``x (B, T, d)``: q, k and v from one matmul when ``fuse`` has run
        (the same numbers as three, read in one pass over the weights). Returns (B, T, d)."""
        if getattr(self, "qkv_weight", None) is None:
            return self(x, *self.project_kv(x))
        q, k, v = F.linear(x, self.qkv_weight, self.qkv_bias).chunk(3, dim=-1)  # (B, T, d) each
        return self(x, self.hook_k(self._split(k)), self.hook_v(self._split(v)), q)

    def fuse(self) -> None:
        """Keep ``[W_q; W_k; W_v]`` as one matrix for ``self_attend`` (a buffer: it follows
        ``.to()``); call again after changing the weights."""
        weights = (self.W_q, self.W_k, self.W_v)
        self.register_buffer("qkv_weight", torch.cat([w.weight for w in weights]).detach(), False)
        self.register_buffer("qkv_bias", torch.cat([w.bias for w in weights]).detach(), False)

    def forward(
        self, x_q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Args: x_q (B, Tq, d); k, v (B, h, Tk, d_k) from ``project_kv``; q (B, Tq, d) when
        already projected (``self_attend``). Returns (B, Tq, d).

        No mask: one unpadded sentence per call, and the decoder attends only to the source.
        """
        q = self.hook_q(self._split(self.W_q(x_q) if q is None else q))
        scores = self.hook_scores(q @ k.transpose(-2, -1) / self.sqrt_d_k)  # (B, h, Tq, Tk)
        pattern = self.hook_pattern(F.softmax(scores, dim=-1))
        z = self.hook_z(pattern @ v)  # (B, h, Tq, d_k)
        B, _, Tq, _ = z.shape
        return self.W_o(z.transpose(1, 2).reshape(B, Tq, self.h * self.d_k))  # (B, Tq, d)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (Eq. 2)."""

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.W_1, self.W_2 = nn.Linear(cfg.d_model, cfg.d_ff), nn.Linear(cfg.d_ff, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_2(F.relu(self.W_1(x)))


class SSRU(nn.Module):
    """Simpler simple recurrent unit: ``f = sigmoid(x W_f + b_f)``, ``c_t = f c_{t-1} + (1-f) x W``.

    It stands where the paper's decoder has masked self-attention: the only path from earlier
    target positions to later ones is the cell ``c``, so there is no decoder attention map.
    """

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.W = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.W_f = nn.Linear(cfg.d_model, cfg.d_model)
        self.hook_forget = HookPoint()  # (B, T, d), the gate f: 1 keeps the past, 0 takes x W
        self.hook_cell = HookPoint()  # (B, T, d), c_t at every position
        one = torch.ones((), device=self.W.weight.device)  # 1 - f without a scalar per call
        self.register_buffer("one", one, persistent=False)

    def fuse(self) -> None:
        """Keep ``[W; W_f]`` as one matrix so a step reads both in one matmul (a buffer: it
        follows ``.to()``); call again after changing the weights."""
        weight = torch.cat([self.W.weight, self.W_f.weight]).detach()  # (2d, d)
        bias = torch.cat([torch.zeros_like(self.W_f.bias), self.W_f.bias]).detach()  # + 0: exact
        self.register_buffer("fused_weight", weight, persistent=False)
        self.register_buffer("fused_bias", bias, persistent=False)

    def forward(self, x: torch.Tensor, cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: x (B, T, d); cell (B, d), c before the first position. Returns relu(c) (B, T, d)
        and the last cell (B, d)."""
        if getattr(self, "fused_weight", None) is None:
            xw, gate = self.W(x), self.W_f(x)
        else:
            xw, gate = F.linear(x, self.fused_weight, self.fused_bias).chunk(2, dim=-1)
        forget = self.hook_forget(torch.sigmoid(gate))  # (B, T, d)
        update = (self.one - forget) * xw  # (B, T, d)
        if x.shape[1] == 1:  # a decoding step: the same sums, without a loop and a stack
            cells = forget * cell[:, None] + update  # (B, 1, d)
            return F.relu(self.hook_cell(cells)), cells[:, 0]
        cells = []
        for t in range(x.shape[1]):  # the recurrence is sequential
            cell = forget[:, t] * cell + update[:, t]
            cells.append(cell)
        c = self.hook_cell(torch.stack(cells, dim=1))  # (B, T, d)
        return F.relu(c), cell
