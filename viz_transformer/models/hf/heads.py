"""What head ablation, importance, value-weighted attention and the logit lens read from a
Hugging Face model: its heads per kind, its output scored by teacher forcing, W^O split per
head, and (decoder-only) the residual stream after each decoder layer with the final norm and
unembedding that read it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from viz_transformer.models.hf.generation import decoder_start
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.own_heads import check_kind
from viz_transformer.models.results import target_logprobs
from viz_transformer.networks.greedy import greedy_loop
from viz_transformer.networks.hooks import any_active, dispatch, point_name
from viz_transformer.records.kinds import AttentionKind

# where W^O sits, relative to the module whose weights we hook: inside it (Llama o_proj, BART and
# Marian out_proj, GPT-2 c_proj, T5 o) or beside it (BERT's attention.output.dense)
OUTPUT_PROJECTIONS = ("o_proj", "out_proj", "c_proj", "o", "SelfAttention.o", "EncDecAttention.o")
SIBLING_PROJECTIONS = ("output.dense",)
CONTINUATION = 5  # greedy tokens a decoder-only model's output is scored on (importance, lens)
# the final norm before the unembedding, as decoder-only models name it on their base model
UNEMBED_CELLS = 2**22  # output-layer weights taken to float32 at a time by ``held_unembed``
FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "norm_f", "decoder.final_layer_norm")


def _attention_module(model: HFParts, kind: AttentionKind, layer: int) -> tuple[str, nn.Module]:
    path = model.names[kind][layer].removesuffix(".hook_pattern")
    return path, model.module.get_submodule(path)


def attention_shape(model: HFParts, kind: str) -> tuple[int, int]:
    """(layers, heads): heads from the attention module (decoders may differ from encoders)."""
    kind = check_kind(model.spec.shows, kind)
    _, attn = _attention_module(model, kind, 0)
    config = model.module.config
    heads = getattr(attn, "num_heads", None) or getattr(attn, "num_attention_heads", None)
    return len(model.names[kind]), int(heads or config.num_attention_heads)


def reference_ids(model: HFParts, text: str, target: str | None = None) -> list[int]:
    """Greedy output (seq2seq: ``hf.generation.greedy_ids``; decoder-only: the next
    ``CONTINUATION`` tokens, one uncached pass each under the caller's hooks) or ``target``'s
    ids, end symbols dropped; nothing for an encoder only."""
    spec = model.spec
    if spec.encoder_only:
        return []
    if target is not None:
        ids = model.target_ids(target)
    elif spec.encoder_decoder:
        ids = model.greedy_ids(model.encode_text(text))
    else:
        return _continuation(model, text)
    eos = model.eos_ids()
    return [i for i in ids if i not in eos] if spec.encoder_decoder else list(ids)


def _continuation(model: HFParts, text: str) -> list[int]:
    """Up to ``CONTINUATION`` greedy next tokens of a decoder-only model (``greedy_loop``, one
    uncached pass per token under the caller's hooks), stopping before an end symbol (but always
    at least one token, the next one, even if it is the end)."""

    def step(prev: torch.Tensor | None, ids: list[int]) -> tuple[torch.Tensor, list[int]]:
        ids = ids if prev is None else [*ids, int(prev[0])]
        return forced_logits(model, text, ids, 1, keep=1)[:, -1], ids  # (1, vocab)

    eos = model.eos_ids()
    (out,) = greedy_loop(step, lambda ids, _: ids, [], 1, eos, CONTINUATION, model.device)
    return out[:-1] if len(out) > 1 and out[-1] in eos else out


def forced_logits(
    model: HFParts, text: str, out_ids: Sequence[int], batch: int, keep: int = 0
) -> torch.Tensor:
    """Logits ``(B, T, vocab)`` of one teacher-forced pass (encoder only: ``(B, 0, 0)``);
    ``keep`` > 0 asks a decoder-only model for its last ``keep`` rows only (``logits_to_keep``:
    the unembedding of a 30-layer 135M model is a fifth of its work per position)."""
    spec = model.spec
    src = model.encode_text(text)
    inputs: dict[str, list[int]] = {"input_ids": src}
    if spec.encoder_decoder:
        inputs["decoder_input_ids"] = [decoder_start(model.module), *out_ids]
    elif spec.decoder_only:
        inputs["input_ids"] = [*src, *out_ids]
    batch_inputs: dict[str, Any] = {
        k: torch.tensor([v] * batch, device=model.device) for k, v in inputs.items()
    }
    if keep and spec.decoder_only and accepts(model.module, "logits_to_keep"):
        batch_inputs["logits_to_keep"] = keep
    with torch.no_grad():
        out = model.module(**batch_inputs)
    logits = getattr(out, "logits", None)
    if logits is None or spec.encoder_only:
        return torch.zeros((batch, 0, 0), device=model.device)
    return logits


def forced_logprobs(
    model: HFParts, text: str, out_ids: Sequence[int], batch: int = 1
) -> torch.Tensor:
    """See ``LoadedModel.forced_logprobs``."""
    spec = model.spec
    logits = forced_logits(model, text, out_ids, batch, keep=len(out_ids) + 1)
    if spec.encoder_only:
        return torch.zeros((batch, 0), device=model.device)
    if spec.encoder_decoder:
        return target_logprobs(logits, [*out_ids, min(model.eos_ids())])
    return target_logprobs(logits[:, :-1], list(out_ids))  # rows before each output id


def output_weight(model: HFParts, kind: AttentionKind, layer: int) -> torch.Tensor:
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


def accepts(module: nn.Module, argument: str) -> bool:
    return argument in inspect.signature(module.forward).parameters


def layer_path(attention_path: str) -> str:
    """The decoder layer holding an attention module: the shortest prefix of its path that is
    an item of a layer list (``model.layers.3``, ``transformer.h.3``, T5's ``decoder.block.3``)."""
    parts = attention_path.split(".")
    cut = next(i for i, part in enumerate(parts) if part.isdigit())
    return ".".join(parts[: cut + 1])


def _stream_reader(name: str) -> Callable[[nn.Module, Any, Any], Any]:
    """A forward hook passing a decoder layer's output hidden states to ``dispatch`` (a hook
    function may replace them); nothing happens outside a ``hooks()`` block."""

    def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        if not any_active():
            return None
        hidden = output[0] if isinstance(output, tuple) else output
        new = dispatch(name, hidden)
        if new is hidden:
            return None
        return (new, *output[1:]) if isinstance(output, tuple) else new

    return hook


def install_stream_hooks(module: nn.Module, names: dict[AttentionKind, list[str]]) -> list[str]:
    """For a decoder-only model, one permanent hook per decoder layer dispatching its output at
    ``<layer path>.hook_resid_post`` (declared in ``extra_hook_names``); others get none.

    Returns:
        the stream names in layer order (empty unless decoder-only).
    """
    if list(names) != ["decoder"]:
        return []
    streams = []
    for pattern in names["decoder"]:
        path = layer_path(pattern.removesuffix(".hook_pattern"))
        streams.append(point_name(path, "hook_resid_post"))
        module.get_submodule(path).register_forward_hook(_stream_reader(streams[-1]))
    module.extra_hook_names = [*getattr(module, "extra_hook_names", ()), *streams]
    return streams


def lens_points(model: HFParts) -> list[str]:
    """The decoder layers' ``hook_resid_post`` names (decoder-only models)."""
    streams = [n for n in model.module.extra_hook_names if n.endswith(".hook_resid_post")]
    if not streams:
        raise ValueError(
            f"{model.name}: the logit lens reads decoder-only Hugging Face models (GPT-2, Llama, "
            "SmolLM2, ...) and the paper and Bergamot models; pick one of those."
        )
    return streams


def _final(model: HFParts) -> tuple[nn.Module, nn.Module]:
    """The base model's final norm and the output layer.

    Raises:
        ValueError: no final norm under a known name (the lens would read unnormalised vectors).
    """
    base = model.module.base_model
    norm = next((m for n in FINAL_NORMS if (m := _module(base, n)) is not None), None)
    head = model.module.get_output_embeddings()
    if norm is None or head is None:
        raise ValueError(
            f"{model.name}: no final norm ({', '.join(FINAL_NORMS)}) or output layer found, so "
            "its residual stream cannot be read as logits; pick a GPT-2 or Llama-family model."
        )
    return norm, head


def unembed(model: HFParts, x: torch.Tensor) -> torch.Tensor:
    """Logits of residual-stream vectors: the base model's final norm, then the output layer."""
    norm, head = _final(model)
    with torch.no_grad():
        return head(norm(x.to(head.weight.dtype)))


def held_unembed(
    model: HFParts, parts: torch.Tensor, stream: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """See ``LoadedModel.held_unembed``: the final norm with the scale it has on ``stream``
    (LayerNorm: each part centred, divided by the stream's standard deviation; RMSNorm: divided
    by the stream's root mean square), times its gain, then the output layer's matrix. In
    float32 whatever the model's dtype, the matrix taken ``UNEMBED_CELLS`` at a time (a float32
    copy of Llama 3's 128,256 x 4,096 would take 2 GB)."""
    norm, head = _final(model)
    eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", None) or 1e-6
    weight = head.weight.detach()  # (vocab, d)
    with torch.no_grad():
        stream, parts = stream.float(), parts.float()
        if isinstance(norm, nn.LayerNorm):
            parts = parts - parts.mean(-1, keepdim=True)
            scale = torch.rsqrt(stream.var(unbiased=False) + eps)
        else:
            scale = torch.rsqrt(stream.pow(2).mean() + eps)
        x = parts * scale * norm.weight.detach().float()  # (n, d)
        if getattr(norm, "bias", None) is not None:
            x = torch.cat([x, norm.bias.detach().float()[None]])  # its row: the norm bias
        out = torch.empty(len(x), weight.shape[0], device=weight.device)  # (n [+1], vocab)
        step = max(1, UNEMBED_CELLS // weight.shape[1])
        for v0 in range(0, weight.shape[0], step):
            torch.matmul(x, weight[v0 : v0 + step].float().T, out=out[:, v0 : v0 + step])
        logits, bias = out[: len(parts)], torch.zeros(weight.shape[0], device=weight.device)
        if len(out) > len(parts):
            bias += out[-1]
        if getattr(head, "bias", None) is not None:
            bias += head.bias.detach().float()
    return logits, bias


def _module(root: nn.Module, name: str) -> nn.Module | None:
    try:
        return root.get_submodule(name)
    except AttributeError:
        return None
