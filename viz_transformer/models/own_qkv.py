"""What the Q, K, V walkthrough reads from our own networks (the paper Transformer and the
Bergamot/Marian port), which share their layout and hook-point names: one pass's hook values and
every layer's ``W_q`` .. ``W_o`` become the ``KindCapture`` record ``analysis.walkthrough`` reads
(``PaperModel.qkv_run``, ``BergamotModel.qkv_run``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from viz_transformer.networks.hooks import (
    ATTENTION_POINTS,
    ATTENTION_SUBLAYERS,
    EMBED_POINTS,
    attention_hook_name,
    encoder_output_name,
    query_stream_name,
)
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture


def attention_module(module: nn.Module, kind: AttentionKind, layer: int) -> nn.Module:
    """The attention sub-layer of ``kind`` in ``layer``: its ``W_q``, ``W_k``, ``W_v``, ``W_o``."""
    stack, sublayer = ATTENTION_SUBLAYERS[kind]
    return getattr(getattr(module, stack).layers[layer], sublayer)


def _linear(lin: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    w = lin.weight.detach().to("cpu", torch.float32).numpy().T.copy()  # (d_in, d_out): x @ w
    return w, lin.bias.detach().to("cpu", torch.float32).numpy().copy()


def _weights(mods: list[nn.Module]) -> dict[str, np.ndarray]:
    """``w_q`` .. ``w_o`` ``[L, d, d]`` and ``b_q`` .. ``b_o`` ``[L, d]`` of every layer."""
    weights: dict[str, np.ndarray] = {}
    for part in "qkvo":
        pairs = [_linear(getattr(m, f"W_{part}")) for m in mods]
        weights[f"w_{part}"] = np.stack([w for w, _ in pairs])
        weights[f"b_{part}"] = np.stack([b for _, b in pairs])
    return weights


def kind_capture(
    model_name: str,
    module: nn.Module,
    kind: AttentionKind,
    cache: dict[str, np.ndarray],
    tokens: tuple[tuple[str, ...], tuple[str, ...]],
    scaled: bool,
) -> KindCapture:
    """The walkthrough's record of one pass of our own network.

    Args:
        model_name: the registry name; module: the network.
        kind: the attention kind read.
        cache: hook name -> float32 array (batch dimension removed) of every point
            ``networks.hooks.qkv_hook_names(module, kind)`` names.
        tokens: the source and the decoder input (start first) as shown.
        scaled: whether the scores were divided by sqrt(d_k).
    """
    n = len(getattr(module, ATTENTION_SUBLAYERS[kind][0]).layers)
    mods = [attention_module(module, kind, i) for i in range(n)]
    x_q = np.stack([cache[query_stream_name(kind, i)] for i in range(n)])
    if kind == "cross":
        x_kv, embed, pos = np.stack([cache[encoder_output_name(module)]] * n), None, None
    else:
        x_kv, (embed, pos) = x_q, (cache[p] for p in EMBED_POINTS[kind])
    captured = {
        p.removeprefix("hook_"): np.stack(
            [cache[attention_hook_name(kind, i, p)] for i in range(n)]
        )
        for p in ATTENTION_POINTS
    }
    src, tgt = tokens
    queries, keys = (src, src) if kind == "encoder" else (tgt, tgt if kind == "decoder" else src)
    return KindCapture(
        model_name,
        kind,
        queries,
        keys,
        mods[0].h,
        scaled,
        x_q,
        x_kv,
        embed,
        pos,
        _weights(mods),
        captured,
    )
