"""What head ablation and the logit lens read from our own networks (the paper Transformer and
the Bergamot/Marian port), which share their layout: ``encoder.layers`` / ``decoder.layers``,
attention sub-layers with ``W_o``, ``cfg.n_heads`` and the same hook-point names."""

from __future__ import annotations

import torch
from torch import nn

from viz_transformer.networks.hooks import ATTENTION_SUBLAYERS, hook_name
from viz_transformer.records.kinds import KIND_SHORT, AttentionKind


def check_kind(shows: tuple[AttentionKind, ...], kind: str) -> AttentionKind:
    """``kind``, once it is one of the attention kinds a model ``shows``.

    Raises:
        ValueError: naming the kinds the model has.
    """
    if kind not in shows:
        have = ", ".join(f"{k!r} ({KIND_SHORT[k]})" for k in shows)
        raise ValueError(f"this model has no {kind!r} attention heads; use one of {have}.")
    return kind  # type: ignore[return-value]


def attention_shape(
    module: nn.Module, shows: tuple[AttentionKind, ...], kind: str
) -> tuple[int, int]:
    """(layers, heads) of the attention of ``kind`` in one of our own networks."""
    stack = ATTENTION_SUBLAYERS[check_kind(shows, kind)][0]
    return len(getattr(module, stack).layers), module.cfg.n_heads


def output_weight(module: nn.Module, kind: AttentionKind, layer: int) -> torch.Tensor:
    """W^O of that attention sub-layer split per head, ``(h, d_k, d_model)``.

    ``W_o`` is an ``nn.Linear`` (weight ``(d_model, h * d_k)``, applied as ``z @ weight.T``), and
    the heads' outputs are concatenated in head order (section 3.2.2).
    """
    stack, sublayer = ATTENTION_SUBLAYERS[kind]
    attn = getattr(getattr(module, stack).layers[layer], sublayer)
    weight = attn.W_o.weight.detach()  # (d_model, h * d_k)
    return weight.T.reshape(attn.h, attn.d_k, weight.shape[0])  # (h, d_k, d_model)


def decoder_stream_names(module: nn.Module) -> list[str]:
    """``decoder.layers.i.hook_resid_post`` for every decoder layer: post-norm networks need no
    final norm, so each is ready for the output layer."""
    return [
        hook_name("decoder", i, None, "hook_resid_post") for i in range(len(module.decoder.layers))
    ]
