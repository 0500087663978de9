"""Rerun a decoder-only Hugging Face model from one decoder layer on.

A clean teacher-forced pass keeps what each decoder layer receives: its input hidden states and
the rest of its call (attention mask, rotary position embeddings, position ids), as the model's
own forward passed them (Llama-like stacks by keyword, GPT-2's blocks partly by position). A
batch whose rows change nothing below layer ``l`` (a head of layer ``l`` ablated or patched)
then runs only layers ``l..`` on copies of layer ``l``'s clean input, and the final norm and
output layer (``unembed``) on the scored positions. One batch can hold rows entering at several
layers: it grows as it goes up the stack, so most layers run on many rows at once (one 9-row
batch per layer was ~7% slower for ``smollm2`` on one CPU core: smaller matrix products). Layers
below ``l`` would see exactly the clean inputs, so their outputs are the clean run's; skipping
them saves about half the layer work of head importance.

The pass runs without a key/value cache, so no call carries state from one run to the next. A
model whose final norm and output layer do not give back its own logits (a soft-capped output,
say) gets no fast path: ``layer_runs`` returns None and callers run whole passes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from viz_transformer.models.hf.heads import accepts, layer_path, unembed
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.results import LayerRuns, target_logprobs
from viz_transformer.records.kinds import AttentionKind

Call = tuple[tuple[Any, ...], dict[str, Any]]  # a layer's positional and keyword arguments


def layer_runs(
    model: HFParts, text: str, out_ids: Sequence[int], kind: AttentionKind
) -> LayerRuns | None:
    """The clean pass over ``text`` + ``out_ids`` kept layer by layer (see the module doc), or
    None where there is no fast path: not a decoder-only model's ``decoder`` kind, nothing to
    score, one layer module used at several places of the stack, or no final norm and output
    layer that reproduce the model's logits."""
    if list(model.names) != ["decoder"] or kind != "decoder" or not out_ids:
        return None
    paths = [layer_path(n.removesuffix(".hook_pattern")) for n in model.names["decoder"]]
    layers = [model.module.get_submodule(p) for p in paths]
    if len(set(map(id, layers))) != len(layers):
        return None
    ids = list(out_ids)
    kept, final, logits = _clean_pass(model, layers, [*model.encode_text(text), *ids], len(ids))
    calls = [call for call in kept if call is not None]
    if len(calls) != len(layers):
        return None
    n = len(ids)

    def tail(hidden: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, n, vocab)
        return unembed(model, hidden[:, -n - 1 : -1])

    try:
        with torch.inference_mode():
            if not torch.allclose(tail(final), logits, atol=1e-4, rtol=1e-4):
                return None
    except ValueError:  # no final norm under a known name
        return None

    def run(firsts: Sequence[int]) -> torch.Tensor:
        if list(firsts) != sorted(firsts) or not firsts:
            raise ValueError(f"rows must enter in ascending layer order, not {list(firsts)}.")
        hidden = calls[firsts[0]][0][0][:0]  # (B, T, d), rows added as their layer comes
        with torch.inference_mode():
            for i in range(firsts[0], len(layers)):
                args, kwargs = calls[i]
                if joining := sum(first == i for first in firsts):
                    hidden = torch.cat([hidden, args[0].expand(joining, -1, -1)])
                batch = hidden.shape[0]
                out = layers[i](hidden, *_expand(args[1:], batch), **_expand(kwargs, batch))
                hidden = out[0] if isinstance(out, tuple) else out
            return target_logprobs(tail(hidden), ids)

    return LayerRuns(clean=target_logprobs(logits, ids), layers=len(layers), run=run)


def _clean_pass(
    model: HFParts, layers: list[nn.Module], ids: list[int], n: int
) -> tuple[list[Call | None], torch.Tensor, torch.Tensor]:
    """One uncached pass keeping each layer's call, the last layer's output ``(1, T, d)`` and
    the logits ``(1, n, vocab)`` of the rows before each scored id."""
    calls: list[Call | None] = [None] * len(layers)
    final: list[torch.Tensor] = []
    mine = threading.get_ident()  # the module is shared: other sessions' passes are not ours

    def keeper(i: int) -> Callable[..., None]:
        def keep(_module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if threading.get_ident() == mine:
                calls[i] = (args, dict(kwargs))

        return keep

    def keep_out(_module: nn.Module, _args: Any, out: Any) -> None:
        if threading.get_ident() == mine:
            final.append(out[0] if isinstance(out, tuple) else out)

    handles = [
        layer.register_forward_pre_hook(keeper(i), with_kwargs=True)
        for i, layer in enumerate(layers)
    ]
    handles.append(layers[-1].register_forward_hook(keep_out))
    inputs: dict[str, Any] = {"input_ids": torch.tensor([ids], device=model.device)}
    if accepts(model.module, "logits_to_keep"):
        inputs["logits_to_keep"] = n + 1
    try:
        with torch.inference_mode():
            out = model.module(**inputs, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return calls, final[-1], out.logits[:, -n - 1 : -1]


def _expand(value: Any, batch: int) -> Any:
    """``value`` with every tensor of batch size 1 (a mask, the rotary tables) viewed ``batch``
    times along its first dimension; tuples, lists and dicts walked, the rest kept."""
    if isinstance(value, torch.Tensor):
        if value.dim() >= 2 and value.shape[0] == 1:
            return value.expand(batch, *value.shape[1:])
        return value
    if isinstance(value, dict):
        return {k: _expand(v, batch) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_expand(v, batch) for v in value)
    return value
