"""The paper model's forward pass written out in plain torch (section 3: Eq. 1 per head, post-norm
sub-layers), the reference the head tests compare the library's hooks with. A test changes one
attention sub-layer by passing its own ``sublayer``; every other one runs ``attention``."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.paper import MultiHeadAttention

# (kind, layer, module, x_q, x_kv, mask) -> the sub-layer's output, before its residual
Sublayer = Callable[
    [str, int, MultiHeadAttention, torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor
]


def heads_z(
    attn: MultiHeadAttention, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None
) -> torch.Tensor:
    """Every head's output z = softmax(Q K^T / sqrt(d_k)) V (Eq. 1), ``(B, h, Tq, d_k)``, before
    W^O; ``mask`` (Tq, Tk) True where a query may see a key."""
    h, d_k = attn.h, attn.d_k

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.view(*t.shape[:2], h, d_k).transpose(1, 2)

    q, k, v = split(attn.W_q(x_q)), split(attn.W_k(x_kv)), split(attn.W_v(x_kv))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return F.softmax(scores, -1) @ v


def merged(attn: MultiHeadAttention, z: torch.Tensor) -> torch.Tensor:
    """The heads' ``z`` (B, h, T, d_k) concatenated and through W^O."""
    b, h, t, d_k = z.shape
    return attn.W_o(z.transpose(1, 2).reshape(b, t, h * d_k))


def attention(
    kind: str,
    layer: int,
    attn: MultiHeadAttention,
    x_q: torch.Tensor,
    x_kv: torch.Tensor,
    mask: torch.Tensor | None,
) -> torch.Tensor:
    """An attention sub-layer as the paper writes it: ``merged(heads_z(...))``."""
    return merged(attn, heads_z(attn, x_q, x_kv, mask))


def forward(
    model: PaperModel, src_ids: list[int], tgt_in: list[int], sublayer: Sublayer = attention
) -> torch.Tensor:
    """log p over the vocabulary at each target position ``(len(tgt_in), vocab)``, teacher-forced
    on ``tgt_in``; each attention sub-layer's output from ``sublayer``."""
    net, d, dev = model.module, model.module.cfg.d_model, model.device
    src, tgt = torch.tensor([src_ids], device=dev), torch.tensor([tgt_in], device=dev)
    x = net.src_embed(src) * math.sqrt(d) + net.pe[: len(src_ids)]
    for i, block in enumerate(net.encoder.layers):
        x = block.norm_1(x + sublayer("encoder", i, block.self_attn, x, x, None))
        x = block.norm_2(x + block.ffn(x))
    y = net.tgt_embed(tgt) * math.sqrt(d) + net.pe[: len(tgt_in)]
    causal = torch.ones(len(tgt_in), len(tgt_in), dtype=torch.bool, device=dev).tril()
    for i, block in enumerate(net.decoder.layers):
        y = block.norm_1(y + sublayer("decoder", i, block.self_attn, y, y, causal))
        y = block.norm_2(y + sublayer("cross", i, block.cross_attn, y, x, None))
        y = block.norm_3(y + block.ffn(y))
    return net.generator(y)[0].log_softmax(-1)
