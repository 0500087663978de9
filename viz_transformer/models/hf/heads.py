"""What head ablation, importance and value-weighted attention read from a Hugging Face model:
its heads per kind, its output scored by teacher forcing, and W^O split per head."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from viz_transformer.models.base import target_logprobs
from viz_transformer.models.own_heads import check_kind
from viz_transformer.records.kinds import AttentionKind

if TYPE_CHECKING:
    from viz_transformer.models.hf.model import HFModel

# where W^O sits, relative to the module whose weights we hook: inside it (Llama o_proj, BART and
# Marian out_proj, GPT-2 c_proj, T5 o) or beside it (BERT's attention.output.dense)
OUTPUT_PROJECTIONS = ("o_proj", "out_proj", "c_proj", "o", "SelfAttention.o", "EncDecAttention.o")
SIBLING_PROJECTIONS = ("output.dense",)


def _attention_module(model: HFModel, kind: AttentionKind, layer: int) -> tuple[str, nn.Module]:
    path = model.names[kind][layer].removesuffix(".hook_pattern")
    return path, model.module.get_submodule(path)


def attention_shape(model: HFModel, kind: str) -> tuple[int, int]:
    """(layers, heads): heads from the attention module (decoders may differ from encoders)."""
    kind = check_kind(model.spec.shows, kind)
    _, attn = _attention_module(model, kind, 0)
    config = model.module.config
    heads = getattr(attn, "num_heads", None) or getattr(attn, "num_attention_heads", None)
    return len(model.names[kind]), int(heads or config.num_attention_heads)


def reference_ids(model: HFModel, text: str, target: str | None) -> list[int]:
    """Greedy output (seq2seq: ``generate``; decoder-only: the next token) or ``target``'s ids,
    end symbols dropped; nothing for an encoder only."""
    arch = model.spec.shows[-1]
    if arch == "encoder":
        return []
    if target is not None:
        with model._lock:
            if arch == "cross":
                ids = model.tokenizer(text_target=target)["input_ids"]
            else:
                ids = model.tokenizer(target, add_special_tokens=False)["input_ids"]
    elif arch == "cross":
        ids = model._greedy(model.encode_text(text))
    else:
        ids = [int(forced_logits(model, text, [], 1)[0, -1].argmax())]
    eos = model._eos_ids()
    return [i for i in ids if i not in eos] if arch == "cross" else list(ids)


def forced_logits(model: HFModel, text: str, out_ids: Sequence[int], batch: int) -> torch.Tensor:
    """Logits ``(B, T, vocab)`` of one teacher-forced pass (encoder only: ``(B, 0, 0)``)."""
    arch = model.spec.shows[-1]
    src = model.encode_text(text)
    inputs: dict[str, list[int]] = {"input_ids": src}
    if arch == "cross":
        start = model.module.config.decoder_start_token_id
        if start is None:
            start = model.module.generation_config.decoder_start_token_id
        inputs["decoder_input_ids"] = [int(start), *out_ids]
    elif arch == "decoder":
        inputs["input_ids"] = [*src, *out_ids]
    batch_inputs = {k: torch.tensor([v] * batch, device=model.device) for k, v in inputs.items()}
    with torch.no_grad():
        out = model.module(**batch_inputs)
    logits = getattr(out, "logits", None)
    if logits is None or arch == "encoder":
        return torch.zeros((batch, 0, 0), device=model.device)
    return logits


def forced_logprobs(model: HFModel, text: str, out_ids: Sequence[int], batch: int) -> torch.Tensor:
    """See ``LoadedModel.forced_logprobs``."""
    logits = forced_logits(model, text, out_ids, batch)
    arch = model.spec.shows[-1]
    if arch == "encoder":
        return torch.zeros((batch, 0), device=model.device)
    if arch == "cross":
        return target_logprobs(logits, [*out_ids, min(model._eos_ids())])
    return target_logprobs(logits[:, :-1], list(out_ids))  # rows before each output id


def output_weight(model: HFModel, kind: AttentionKind, layer: int) -> torch.Tensor:
    """W^O split per head, ``(h, d_k, d_model)``, from the projection after the attention.

    Raises:
        ValueError: an architecture whose output projection is not where these models keep it.
    """
    path, attn = _attention_module(model, kind, layer)
    _, heads = attention_shape(model, kind)
    parent = model.module.get_submodule(path.rpartition(".")[0]) if "." in path else model.module
    found = [_find(attn, n) for n in OUTPUT_PROJECTIONS] + [
        _find(parent, n) for n in SIBLING_PROJECTIONS
    ]
    proj = next((p for p in found if p is not None), None)
    if proj is None:
        raise ValueError(
            f"{model.name}: no output projection (o_proj, out_proj, c_proj, output.dense) next to "
            f"{path}; value-weighted maps need W^O."
        )
    weight = proj.weight.detach()
    if isinstance(proj, nn.Linear):  # weight (d_model, h * d_k), applied as z @ weight.T
        weight = weight.T
    return weight.reshape(heads, weight.shape[0] // heads, weight.shape[1])  # GPT-2 Conv1D too


def _find(module: nn.Module, name: str) -> nn.Module | None:
    try:
        found = module.get_submodule(name)
    except AttributeError:
        return None
    return found if hasattr(found, "weight") else None
