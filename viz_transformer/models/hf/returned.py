"""Attention modules of families that return their weights without declaring them to
transformers (``_can_record_outputs``): DeBERTa, BLOOM, GPT-J, MPT, CodeGen, RoFormer, XLM,
FSMT, OpenAI GPT, ... Their modules hand the weights up when the model runs with
``output_attentions``; one short pass with it finds, for every map the model returns, the innermost
module whose output tuple holds that very tensor, and at which index. Such a model then runs with
``output_attentions`` whenever a pattern is asked in the calling thread (a forward pre-hook), so
the permanent forward hooks read every call's weights; its maps stay whole (they are not computed
from queries and keys), so an input whose maps would pass ``settings.MAX_MATERIALISE`` weights is
refused before the pass with a message."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel

from viz_transformer import settings
from viz_transformer.networks.hooks import active_hook_names
from viz_transformer.records.kinds import AttentionKind

PROBE = 6  # tokens of the finding pass
OUTPUTS = {"encoder": "encoder_attentions", "decoder": "decoder_attentions",
           "cross": "cross_attentions"}  # fmt: skip
Found = dict[AttentionKind, list[tuple[str, nn.Module, int]]]


class NoMaps(ValueError):
    """The model returns no attention map (why in the message)."""


def with_returned(
    model: PreTrainedModel, shows: tuple[AttentionKind, ...], declared: Found
) -> Found:
    """``declared`` (``names.attention_modules``) when it has modules of every kind; else the
    modules that return the weights (``returned_modules``), with ``output_attentions`` asked of
    every pass that captures a pattern and long inputs refused (``_ask_weights``).

    Raises:
        NoMaps: the model returns no softmax attention map.
    """
    if all(declared.values()):
        return declared
    found = returned_modules(model, shows)
    maps = sum(len(entries) for entries in found.values())
    heads = max(int(getattr(m, "vt_heads", 1)) for es in found.values() for _, m, _ in es)
    for part in model.modules():
        if isinstance(part, PreTrainedModel):
            part.register_forward_pre_hook(
                _ask_weights(type(model).__name__, maps * heads), with_kwargs=True
            )
    return found


def _ask_weights(name: str, per_token_pair: int) -> Any:
    """A forward pre-hook: in a thread capturing patterns, ``output_attentions=True``, after
    refusing an input whose maps (``per_token_pair`` x tokens²) pass ``MAX_MATERIALISE``."""

    def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not any(n.endswith("hook_pattern") for n in active_hook_names()):
            return None
        ids = [kwargs.get(k) for k in ("input_ids", "decoder_input_ids")] + list(args[:1])
        n = max((x.shape[-1] for x in ids if isinstance(x, torch.Tensor)), default=0)
        if per_token_pair * n * n > settings.MAX_MATERIALISE:
            most = int((settings.MAX_MATERIALISE / per_token_pair) ** 0.5)
            raise ValueError(
                f"{name} computes attention in its own code, so its maps are kept whole (not "
                f"a head at a time): {n:,} tokens would hold {per_token_pair * n * n:,} "
                f"weights, above this server's limit of {settings.MAX_MATERIALISE:,} "
                f"(VT_MAX_MATERIALISE). Shorten the input to about {most:,} tokens."
            )
        return args, {**kwargs, "output_attentions": True}

    return hook


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
    table = model.get_input_embeddings()
    vocab = getattr(table, "weight", table).shape[0]  # Perceiver's is the matrix itself
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
    calls: list[tuple[str, nn.Module, Any]] = []  # (path, module, output) as each call ends
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
            entry[1].vt_heads = weights.shape[1]
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
    rows = weights.float().sum(-1)
    if not torch.allclose(rows, torch.ones_like(rows), atol=1e-3):
        raise NoMaps(
            f"{name} returns as {kind} attentions (layer {layer}) something whose rows do not "
            "sum to 1 (scores before the softmax, or weights after another step), not its "
            "softmax map: viz-transformer does not guess the map from it."
        )
    if weights.shape[-1] != weights.shape[-2] and kind != "cross":
        raise NoMaps(
            f"{name} returns its {kind} attention as maps of {weights.shape[-2]} queries x "
            f"{weights.shape[-1]} keys, not over the input's {PROBE} tokens (local attention "
            "in bands, or pooled tokens): viz-transformer shows maps over the tokens only."
        )
