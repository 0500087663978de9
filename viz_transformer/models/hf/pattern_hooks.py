"""The permanent hooks that read a Hugging Face model's attention: each attention module's
``hook_pattern`` (and the points ``"vt"`` dispatches to), and the forward hooks that pass on the
weights of a module that computes them without the attention function."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel

from viz_transformer.models.hf.attention import calls_seen, name_modules
from viz_transformer.models.hf.call_record import CallRecord
from viz_transformer.models.hf.names import attention_modules
from viz_transformer.models.hf.returned import with_returned
from viz_transformer.networks.hooks import dispatch, is_active, point_name
from viz_transformer.records.kinds import AttentionKind

_ENTERED = threading.local()  # per thread: the calls each hooked module had seen on entry


def _weights_reader(name: str, index: int) -> tuple[Callable[..., None], Callable[..., None]]:
    """Forward pre- and post-hooks passing the module's attention weights (``output[index]``)
    to ``dispatch``, for a module that called no attention function in between (``"vt"``
    passes each call's weights itself). On a long input's capture (``hook_call``) they go
    there whole, marked as no softmax map when rows do not sum to 1 (linear attention)."""
    base = name.removesuffix(".hook_pattern")

    def enter(module: nn.Module, args: Any) -> None:
        _ENTERED.__dict__.setdefault(base, []).append(calls_seen(base))

    def leave(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        stack = _ENTERED.__dict__.get(base) or [-1]
        if calls_seen(base) != stack.pop():
            return
        weights = output[index] if isinstance(output, (tuple, list)) else None
        if weights is None:
            return
        dispatch(name, weights)
        if not is_active(point_name(base, "hook_call")):
            return
        kept = weights[0].detach().to("cpu", torch.float32)
        sums = kept.sum(-1)
        softmax = bool((kept >= 0).all() and ((sums - 1).abs() <= 1e-3).all())
        why = f"{type(module).__name__} computes its weights without the attention function"
        dispatch(point_name(base, "hook_call"), CallRecord(weights=kept, why=why, softmax=softmax))

    return enter, leave


def install_pattern_hooks(
    module: PreTrainedModel, shows: tuple[AttentionKind, ...]
) -> dict[AttentionKind, list[str]]:
    """Register one permanent hook per attention module and declare its ``hook_pattern`` name
    (and the ``hook_q`` / ``hook_k`` names the ``"vt"`` attention function dispatches to).

    Returns:
        kind -> hook names in layer order (``model.decoder.layers.0.encoder_attn.hook_pattern``).

    A family that does not declare its attention modules to transformers
    (``_can_record_outputs``) is read from the modules that return its weights
    (``returned.with_returned``).

    Raises:
        ValueError: the model returns no softmax attention map (``returned.NoMaps``).
    """
    names: dict[AttentionKind, list[str]] = {}
    modules = with_returned(module, shows, attention_modules(module, shows))
    qk_names = name_modules(modules)
    for kind, entries in modules.items():
        names[kind] = []
        for path, attn, index in entries:
            names[kind].append(point_name(path, "hook_pattern"))
            enter, leave = _weights_reader(names[kind][-1], index)
            attn.register_forward_pre_hook(enter)
            attn.register_forward_hook(leave)
    module.extra_hook_names = [n for ns in names.values() for n in ns] + qk_names
    return names
