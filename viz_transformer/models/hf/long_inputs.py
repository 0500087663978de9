"""Long inputs of a Hugging Face model: when a pass keeps each call's queries, keys and formula
instead of its weights (``keeps_qk``, ``settings.LAZY_ABOVE``), and an encoder whose pass runs
only when a head is asked, only as far as that head's layer (``deferred_encoder``)."""

from __future__ import annotations

import contextlib

import torch
from transformers import PretrainedConfig, PreTrainedModel

from viz_transformer import settings
from viz_transformer.models.hf.call_order import in_call_order, pattern_bases
from viz_transformer.models.hf.call_record import CallRecord
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.networks.hooks import hooks, point_name
from viz_transformer.records.formula import Formula
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import LazyPatterns


class _Enough(Exception):
    """Raised by a hook to end a forward pass once it has the layers it needs."""


def too_big(
    config: PretrainedConfig, names: dict[AttentionKind, list[str]], **inputs: list[int]
) -> bool:
    """Whether some attention kind of a pass over ``inputs`` would hold more than
    ``settings.LAZY_ABOVE`` weights.

    Args:
        config: the model's; names: its hook-pattern names per kind (layers per kind).
        inputs: ``input_ids`` and, for an encoder-decoder, ``decoder_input_ids``.
    """
    heads = getattr(config, "num_attention_heads", None) or getattr(
        config, "encoder_attention_heads", 1
    )
    n_src = len(inputs.get("input_ids", ()))
    n_tgt = len(inputs.get("decoder_input_ids", ())) or n_src
    biggest = max(n_src, n_tgt) ** 2 * heads * max(len(ns) for ns in names.values())
    return biggest > settings.LAZY_ABOVE


def deferrable(model: HFParts) -> bool:
    """Whether an encoder-only model runs one attention call per module, one module per layer
    (so that layer ``i`` is the ``i``-th call: ALBERT's shared module is not)."""
    flat = [n for ns in model.names.values() for n in ns]
    layers = getattr(model.module.config, "num_hidden_layers", None)
    return model.spec.encoder_only and len(set(flat)) == len(flat) == layers


def keeps_qk(model: HFParts, **inputs: list[int]) -> bool:
    """Whether a pass over ``inputs`` keeps queries and keys instead of every weight: when the
    model allows it and some kind would hold more than ``settings.LAZY_ABOVE`` weights, or the
    model runs below float32 (its own softmax would give rows that sum to 1 only within ~2e-3;
    ``LazyPatterns`` takes it in float32)."""
    if not model.lazy_capable:
        return False
    reduced = model.module.dtype != torch.float32
    return reduced or too_big(model.module.config, model.names, **inputs)


def deferred_encoder(module: PreTrainedModel, names: list[str], ids: list[int]) -> LazyPatterns:
    """Encoder patterns whose forward pass runs only when a head is asked, and only as far as
    that head's layer (``LazyPatterns.deferred``).

    Args:
        module: an encoder-only model with one attention call per layer (``deferrable``).
        names: its encoder hook-pattern names, in layer order; ids: the input ids (S,).
    """
    bases = pattern_bases(names)
    batch = {"input_ids": torch.tensor([ids], device=module.device)}
    batch["attention_mask"] = torch.ones_like(batch["input_ids"])

    def fetch(layer: int) -> dict[int, tuple[torch.Tensor, torch.Tensor, Formula] | torch.Tensor]:
        flat = [point_name(b, "hook_call") for b in bases[: layer + 1]]

        def stop(x: CallRecord, name: str) -> None:
            raise _Enough

        with (
            torch.no_grad(),
            in_call_order(module, flat) as seen,
            hooks(module, {flat[-1]: stop}),
            contextlib.suppress(_Enough),
        ):
            module(**batch)
        out: dict[int, tuple[torch.Tensor, torch.Tensor, Formula] | torch.Tensor] = {}
        for i, (_, r) in enumerate(seen):
            assert isinstance(r, CallRecord)
            if r.q is None or r.k is None:  # a call the tiles cannot read: its weights
                out[i] = r.weights  # type: ignore[assignment]
            else:
                out[i] = (r.q, r.k, r.formula or Formula())
        return out

    shape = (len(bases), module.config.num_attention_heads, len(ids), len(ids))
    return LazyPatterns.deferred(shape, False, fetch)
