"""Attention modules of families that return their weights without declaring them to
transformers (``_can_record_outputs``): DeBERTa, BLOOM, GPT-J, MPT, CodeGen, RoFormer, XLM,
FSMT, ProphetNet, ... Their modules hand the weights up when the model runs with
``output_attentions``; one short pass with it finds, for every map the model returns, the innermost
module whose output tuple holds that very tensor, and at which index. Such a model then runs with
``config.output_attentions`` on, so the permanent forward hooks read every call's weights, and
keeps its maps whole (they are not computed from queries and keys)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel

from viz_transformer.records.kinds import AttentionKind

PROBE = 6  # tokens of the finding pass
OUTPUTS = {"encoder": "encoder_attentions", "decoder": "decoder_attentions",
           "cross": "cross_attentions"}  # fmt: skip
Found = dict[AttentionKind, list[tuple[str, nn.Module, int]]]


class NoMaps(ValueError):
    """The model returns no attention map (why in the message)."""


@contextlib.contextmanager
def _eager(model: PreTrainedModel) -> Iterator[None]:
    """Inside, every config of ``model`` asks for eager attention (which returns weights)."""
    configs = [m.config for m in model.modules() if isinstance(m, PreTrainedModel)]
    before = [c._attn_implementation for c in configs]
    for c in configs:
        c._attn_implementation = "eager"
    try:
        yield
    finally:
        for c, impl in zip(configs, before, strict=True):
            c._attn_implementation = impl


def _probe_batch(model: PreTrainedModel, shows: tuple[AttentionKind, ...]) -> dict[str, Any]:
    vocab = model.get_input_embeddings().weight.shape[0]
    ids = torch.tensor([[min(i, vocab - 1) for i in range(3, 3 + PROBE)]], device=model.device)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if "cross" in shows:
        batch["decoder_input_ids"] = ids
    return batch


def returned_modules(model: PreTrainedModel, shows: tuple[AttentionKind, ...]) -> Found:
    """Per kind, the modules whose outputs carry the maps ``output_attentions`` returns, in
    layer order (a module run in several layers stands once): ``(path, module, index)``.

    Raises:
        NoMaps: the model returns no weights, or what it returns is no softmax map.
    """
    calls: list[tuple[str, nn.Module, Any]] = []
    handles = [
        m.register_forward_hook(lambda mod, args, out, p=path: calls.append((p, mod, out)))
        for path, m in model.named_modules()
        if path
    ]
    name = type(model).__name__
    try:
        with torch.no_grad(), _eager(model):
            out = model(**_probe_batch(model, shows), output_attentions=True, use_cache=False)
    except Exception as exc:
        raise NoMaps(f"{name} does not run with output_attentions: {exc}") from None
    finally:
        for h in handles:
            h.remove()
    found: Found = {}
    for kind in shows:
        maps = getattr(out, OUTPUTS[kind] if "cross" in shows else "attentions", None)
        if not maps or any(not isinstance(m, torch.Tensor) for m in maps):
            raise NoMaps(
                f"{name} returns no {kind} attention weights: it has no softmax attention map "
                "to show (its tokens mix through a state, a recurrence or a transform)."
            )
        found[kind] = []
        for layer, weights in enumerate(maps):
            _check_softmax(name, kind, layer, weights)
            entry = _innermost(calls, weights)
            if entry is None:
                raise NoMaps(f"{name} returns {kind} weights that no module of it outputs.")
            if entry[0] not in [e[0] for e in found[kind]]:
                found[kind].append(entry)
    return found


def _innermost(
    calls: list[tuple[str, nn.Module, Any]], weights: torch.Tensor
) -> tuple[str, nn.Module, int] | None:
    """The first call (forward hooks run innermost first) whose output tuple holds ``weights``."""
    for path, module, out in calls:
        if isinstance(out, (tuple, list)):  # OpenAI GPT's blocks return lists
            for index, item in enumerate(out):
                if item is weights:
                    return path, module, index
    return None


def _check_softmax(name: str, kind: str, layer: int, weights: torch.Tensor) -> None:
    """Refuse weights that are no ``[batch, heads, queries, keys]`` softmax map."""
    rows = weights.float().sum(-1)
    if weights.dim() < 4:  # RWKV's state, YOSO's hashes
        raise NoMaps(
            f"{name} returns {kind} 'attentions' of shape {tuple(weights.shape)} (layer "
            f"{layer}), no query x key map: it has no softmax attention map to show."
        )
    if weights.dim() > 4:
        raise NoMaps(
            f"{name} returns its {kind} attention in blocks of shape {tuple(weights.shape)} "
            f"(layer {layer}), not a query x key map: viz-transformer cannot show it as one."
        )
    if not torch.allclose(rows, torch.ones_like(rows), atol=1e-3):
        raise NoMaps(
            f"{name} returns {kind} weights (layer {layer}) whose rows do not sum to 1: they "
            "are no softmax map over the keys, and viz-transformer cannot show them as one."
        )
    if weights.shape[-1] != weights.shape[-2] and kind != "cross":
        raise NoMaps(
            f"{name} returns its {kind} attention as {weights.shape[-1]} keys per query, not a "
            f"map over its {weights.shape[-2]} tokens (local attention in bands): "
            "viz-transformer cannot show it as a map."
        )
