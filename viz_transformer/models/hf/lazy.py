"""Long inputs of Hugging Face models: when a pass keeps each layer's queries and keys instead of
every weight, and the ``LazyPatterns`` built from them (``settings.LAZY_ABOVE``)."""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from transformers import PretrainedConfig, PreTrainedModel

from viz_transformer import settings
from viz_transformer.models.hf.heads import accepts
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.results import row_argmax
from viz_transformer.networks.hooks import collect_calls, hooks, point_name
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Patterns

QK = ("hook_q", "hook_k")
ARGMAX_CELLS = 2**24  # logits per chunk of rows whose argmax ``next_ids`` takes (64 MB float32)


class _Enough(Exception):
    """Raised by a hook to end a forward pass once it has the layers it needs."""


def _bases(pattern_names: list[str]) -> list[str]:
    """The attention modules' paths of their ``hook_pattern`` names."""
    return [n.removesuffix(".hook_pattern") for n in pattern_names]


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


def one_call_per_layer(names: dict[AttentionKind, list[str]]) -> bool:
    """False for ALBERT-like models that run one attention module in every layer."""
    flat = [n for ns in names.values() for n in ns]
    return len(set(flat)) == len(flat)


def qk_names(names: dict[AttentionKind, list[str]]) -> list[str]:
    """The query and key hook points of every attention module in ``names``."""
    return [point_name(b, p) for ns in names.values() for b in _bases(ns) for p in QK]


def scaling(module: PreTrainedModel, base: str) -> float:
    """What the attention module at ``base`` multiplied ``q . k`` by in the last pass that
    captured its queries (``hf_attention`` leaves it on the module as ``vt_scaling``)."""
    for part in module.get_submodule(base).modules():
        if hasattr(part, "vt_scaling"):
            return float(part.vt_scaling)
    raise RuntimeError(f"{base} recorded no scale: it did not run our attention function.")


def lazy_patterns(
    module: PreTrainedModel,
    calls: dict[str, list[torch.Tensor]],
    names: dict[AttentionKind, list[str]],
) -> dict[AttentionKind, Patterns]:
    """Per kind, patterns that compute a head's ``[q, k]`` when indexed, from the captured calls
    of ``qk_names(names)`` (``(H, n, d_k)`` tensors each, in layer order, kept on the model's
    device in its dtype: the heads are computed there, scale and softmax in float32)."""
    out: dict[AttentionKind, Patterns] = {}
    for kind, ns in names.items():
        bases = _bases(ns)
        qs = [q for b in bases for q in calls[point_name(b, "hook_q")]]
        ks = [k for b in bases for k in calls[point_name(b, "hook_k")]]
        scales = [scaling(module, b) for b in bases for _ in calls[point_name(b, "hook_q")]]
        out[kind] = LazyPatterns(qs, ks, causal=kind == "decoder", scale=scales)
    return out


def deferred_encoder(module: PreTrainedModel, names: list[str], ids: list[int]) -> LazyPatterns:
    """Encoder patterns whose forward pass runs only when a head is asked, and only as far as
    that head's layer (``LazyPatterns.deferred``).

    Args:
        module: an encoder-only model with one attention module per layer.
        names: its encoder hook-pattern names, in layer order; ids: the input ids (S,).
    """
    bases = _bases(names)
    batch = {"input_ids": torch.tensor([ids], device=module.device)}
    batch["attention_mask"] = torch.ones_like(batch["input_ids"])

    def fetch(layer: int) -> dict[int, tuple[torch.Tensor, torch.Tensor, float]]:
        flat = [point_name(b, p) for b in bases[: layer + 1] for p in QK]

        def stop(x: torch.Tensor, name: str) -> None:
            raise _Enough

        last = {point_name(bases[layer], "hook_k"): stop}
        with (
            torch.no_grad(),
            collect_calls(module, flat, host=False) as calls,
            hooks(module, last),
            contextlib.suppress(_Enough),
        ):
            module(**batch)
        return {
            i: (
                calls[point_name(b, "hook_q")][0],
                calls[point_name(b, "hook_k")][0],
                scaling(module, b),
            )
            for i, b in enumerate(bases[: layer + 1])
        }

    shape = (len(bases), module.config.num_attention_heads, len(ids), len(ids))
    return LazyPatterns.deferred(shape, False, fetch)


def lazy(model: HFParts, **inputs: list[int]) -> bool:
    """Whether a pass over ``inputs`` keeps queries and keys instead of every weight: when the
    model allows it and some kind would hold more than ``settings.LAZY_ABOVE`` weights, or the
    model runs below float32 (its own softmax would give rows that sum to 1 only within ~2e-3;
    ``LazyPatterns`` takes it in float32)."""
    if not model.lazy_capable:
        return False
    reduced = model.module.dtype != torch.float32
    return reduced or too_big(model.module.config, model.names, **inputs)


def run(
    model: HFParts, **inputs: list[int]
) -> tuple[list[int] | None, dict[AttentionKind, Patterns]]:
    """One forward pass of ``model`` over ``inputs`` reading every attention module.

    Each call of a hooked module is kept in call order, rather than the last one as
    ``collect`` does, because ALBERT runs one shared attention module once per layer.
    Long inputs (``lazy``) keep each layer's queries and keys on the model's device and return
    ``LazyPatterns``.

    Returns:
        the most likely next id at every output row (``next_ids``; None for a model without a
        head) and kind -> ``[L, H, q, k]``.
    """
    keep_qk = lazy(model, **inputs)
    flat = qk_names(model.names) if keep_qk else [n for ns in model.names.values() for n in ns]
    batch = {k: torch.tensor([v], device=model.device) for k, v in inputs.items()}
    with torch.no_grad(), collect_calls(model.module, flat, host=not keep_qk) as calls:
        preds = next_ids(model, batch)
    missing = [n for n in flat if not calls[n]]
    if missing:
        raise RuntimeError(
            f"{model.name} returned no attention weights at {missing[:2]}; it must run with "
            "attn_implementation='vt' or 'eager' (HFModel.load sets it)."
        )
    if keep_qk:
        arrays = lazy_patterns(model.module, calls, model.names)
    else:
        arrays = {
            kind: np.stack([a for n in ns for a in calls[n]]) for kind, ns in model.names.items()
        }
    return preds, arrays


def next_ids(model: HFParts, batch: dict[str, torch.Tensor]) -> list[int] | None:
    """One pass over ``batch`` (no cache kept): each output row's most likely next id. A
    decoder-only model's base model gives its last hidden states and the output layer reads them
    ``ARGMAX_CELLS`` logits at a time: never the ``[T, vocabulary]`` logits (7.8 GB in bfloat16
    at 32,768 tokens of Llama 3) only to take their argmax. The logits' post-processing of some
    models (a positive scale, soft-capping) keeps each row's argmax."""
    module = model.module
    extra = {"use_cache": False} if accepts(module, "use_cache") else {}
    head = module.get_output_embeddings()
    base = module.base_model is not module  # Llama 4's causal LM is its own base model
    if model.spec.decoder_only and head is not None and base and accepts(module, "logits_to_keep"):
        hidden = module.base_model(**batch, **extra).last_hidden_state[0]  # (T, d)
        rows = max(1, ARGMAX_CELLS // head.weight.shape[0])
        return [
            i
            for r0 in range(0, len(hidden), rows)
            for i in row_argmax(head(hidden[r0 : r0 + rows]))
        ]
    logits = getattr(module(**batch, **extra), "logits", None)
    return None if logits is None else row_argmax(logits[0])
