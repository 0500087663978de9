"""The attention output projections (W^O) as the model runs them, read by PyTorch forward hooks
and nothing of the library's capture code: an oracle for tests of what the library says each
head writes. Finds the projection by each family's own module paths (the paper and Bergamot
networks, Hugging Face GPT-2, Llama and BERT)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

Kept = dict[str, torch.Tensor]  # "in": the projection's input (T, h * d_k), "out": (T, d)


def output_projections(model: nn.Module, kind: str) -> list[nn.Module]:
    """Each layer's attention output projection of ``kind`` in order, in a ``LoadedModel``
    (its ``module``) or a bare network."""
    net = getattr(model, "module", model)
    if hasattr(net, "transformer"):  # GPT-2
        return [block.attn.c_proj for block in net.transformer.h]
    if hasattr(net, "model") and hasattr(net.model, "layers"):  # Llama
        return [layer.self_attn.o_proj for layer in net.model.layers]
    if hasattr(net, "encoder") and hasattr(net.encoder, "layer"):  # BERT
        return [layer.attention.output.dense for layer in net.encoder.layer]
    stack = net.encoder if kind == "encoder" else net.decoder  # paper, Bergamot
    sub = "cross_attn" if kind == "cross" else "self_attn"
    return [getattr(layer, sub).W_o for layer in stack.layers]


@contextmanager
def recording(projs: list[nn.Module]) -> Iterator[list[Kept]]:
    """Per projection, its input and output of the last call inside the block (batch row 0)."""
    kept: list[Kept] = [{} for _ in projs]

    def keep(i: int) -> Callable[..., None]:
        def hook(_module: nn.Module, args: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            kept[i]["in"], kept[i]["out"] = args[0][0].detach(), output[0].detach()

        return hook

    handles = [p.register_forward_hook(keep(i)) for i, p in enumerate(projs)]
    try:
        yield kept
    finally:
        for handle in handles:
            handle.remove()


def _device(proj: nn.Module) -> torch.device:
    return next(proj.parameters()).device


@torch.no_grad()
def per_head(proj: nn.Module, x: torch.Tensor, n_heads: int) -> np.ndarray:
    """``[h, T, d]`` float64: the projection applied to head h's slice of its input ``x``
    ``(T, h * d_k)`` alone (the other heads' slices zeroed), less its bias."""
    d_k = x.shape[-1] // n_heads
    zero = proj(torch.zeros_like(x))
    out = []
    for h in range(n_heads):
        alone = torch.zeros_like(x)
        alone[:, h * d_k : (h + 1) * d_k] = x[:, h * d_k : (h + 1) * d_k]
        out.append((proj(alone) - zero).double().cpu().numpy())
    return np.stack(out)


@torch.no_grad()
def projection_bias(proj: nn.Module, width: int) -> np.ndarray:
    """``(d,)`` float64: what the projection makes of a zero input of ``width``."""
    return proj(torch.zeros(1, width, device=_device(proj))).double().cpu().numpy()[0]
