"""One attention function for every Hugging Face model we load: what each call passes is read,
and the call computes what this thread captures, never more.

transformers 5 routes a model's attention through ``ALL_ATTENTION_FUNCTIONS[impl]``. We register
``"vt"`` there, so one cached model serves every Streamlit session whatever each one captures.
Per call (a module run twice is two calls, in call order):

- ``<module>.hook_pattern`` active: the model's own ``eager_attention_forward`` (from its modeling
  file); its weights go to ``hook_pattern``, one per call (a module that calls no attention
  function passes its returned weights there from its forward hook, ``hf.names``);
- ``<module>.hook_call`` active (long inputs): the call's queries and keys as the model made them
  (after rotary embeddings, before grouped-query repetition, in the model's dtype) and the
  formula read from the call's arguments (``hf.calls``: scale, soft-cap, the mask's predicate,
  position bias, sinks), checked against the model's own function on a few rows
  (``hf.call_record``), go to ``hook_call``; a call that cannot be read keeps its weights whole;
- otherwise the output alone: fused SDPA where the call is plain, else the model's own function
  a block of query rows at a time.

The mask function (``vt_mask``) builds no ``T x T`` mask unless eager attention will add it: it
gives None where SDPA needs none, else the predicate the mask is built from (``RuleMask``).
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

from viz_transformer.models.hf.call_record import CallRecord, checked
from viz_transformer.models.hf.calls import (
    Call,
    RuleMask,
    attend_in_rows,
    fused,
    own_eager,
    read_call,
    rule_mask,
)
from viz_transformer.networks.hooks import active_hook_names, dispatch, is_active, point_name

IMPLEMENTATION = "vt"
POINTS = ("hook_q", "hook_k", "hook_v", "hook_z", "hook_call")  # what ``"vt"`` dispatches to
_SEEN = threading.local()  # per thread: attention-function calls per hook base


def _generic_eager(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's eager attention, for a modeling file that has none of its own."""
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    weights = query @ key.transpose(2, 3) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = nn.functional.softmax(weights, dim=-1)
    weights = nn.functional.dropout(weights, p=dropout, training=module.training)
    return (weights @ value).transpose(1, 2).contiguous(), weights


def calls_seen(base: str) -> int:
    """How many calls of the attention function this thread has made from module ``base``."""
    return getattr(_SEEN, "calls", {}).get(base, 0)


def _count(base: str) -> None:
    seen = _SEEN.__dict__.setdefault("calls", {})
    seen[base] = seen.get(base, 0) + 1


def vt_attention_forward(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention for ``ALL_ATTENTION_FUNCTIONS["vt"]``; see the module docstring."""
    base = getattr(module, "vt_hook_base", None)
    eager = own_eager(module, _generic_eager)
    if base is None:
        return _output(eager, Call(module, query, key, value, attention_mask, kwargs)), None
    _count(base)
    if is_active(point_name(base, "hook_q")):
        dispatch(point_name(base, "hook_q"), query)  # unscaled: no rounding in a half dtype
        dispatch(point_name(base, "hook_k"), key)
    value = dispatch(point_name(base, "hook_v"), value)  # (B, h_kv, Tk, d_k), bias included
    call = Call(module, query, key, value, attention_mask, kwargs)
    record = is_active(point_name(base, "hook_call"))
    formula, why = read_call(call, eager) if record else (None, "")
    if formula is not None:
        formula = checked(eager, call, formula)
        why = why or "the model's own function gives other weights than its arguments say"
    pattern = is_active(point_name(base, "hook_pattern"))
    weights = None
    if pattern or (record and formula is None):
        out, weights = call.run(eager)
        if pattern:  # a sink's weight may be what a row lacks of 1 (``Trace.sink_layers``)
            weights.vt_sinks = kwargs.get("s_aux") is not None or kwargs.get("sinks") is not None
            dispatch(point_name(base, "hook_pattern"), weights)
        if record:
            kept = weights[0].detach().to("cpu", torch.float32)
            dispatch(point_name(base, "hook_call"), CallRecord(weights=kept, why=why))
    else:
        if record:
            rec = CallRecord(query[0].detach(), key[0].detach(), formula)
            dispatch(point_name(base, "hook_call"), rec)
        out = _output(eager, call)
    z_name = point_name(base, "hook_z")
    if is_active(z_name):  # the heads' outputs before W^O, (B, h, Tq, d_k) as in our networks
        out = dispatch(z_name, out.transpose(1, 2)).transpose(1, 2)
    return out, weights


def _output(eager: Any, call: Call) -> torch.Tensor:
    """A call's output ``(B, Tq, h, d_k)`` without its weights: fused SDPA when the call is
    plain (scale, mask, position bias) and the model supports SDPA, else the model's own
    function; a block of query rows at a time when the mask is a predicate (no ``T x T`` mask
    made)."""
    kwargs = call.kwargs
    plain = kwargs.get("softcap") is None and kwargs.get("s_aux") is None
    plain = plain and kwargs.get("sinks") is None and fused(call.module)
    if isinstance(call.mask, RuleMask) or not plain:
        return attend_in_rows(sdpa_attention_forward if plain else eager, call)
    return call.run(sdpa_attention_forward)[0]


def vt_mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """The mask of ``"vt"`` (``calls.rule_mask``): dense only where eager attention runs."""
    if args:  # transformers passes keywords; anything else gets eager's own mask
        return eager_mask(*args, **kwargs)
    return rule_mask(_patterns_asked(), **kwargs)


def _patterns_asked() -> bool:
    return any(n.endswith(("hook_pattern", "hook_scores")) for n in active_hook_names())


def register() -> str:
    """Register ``"vt"`` (idempotent) with ``vt_mask``."""
    if IMPLEMENTATION not in AttentionInterface._global_mapping:
        AttentionInterface.register(IMPLEMENTATION, vt_attention_forward)
        ALL_MASK_ATTENTION_FUNCTIONS.register(IMPLEMENTATION, vt_mask)
    return IMPLEMENTATION


def name_modules(modules: dict[str, list[tuple[str, nn.Module, int]]]) -> list[str]:
    """Give every attention module its hook base name (its path); return the names of the
    points ``vt_attention_forward`` dispatches to (``POINTS``)."""
    names = []
    for entries in modules.values():
        for path, module, _ in entries:
            for part in module.modules():  # T5 hooks the layer; its SelfAttention calls attention
                part.vt_hook_base = path
            names += [point_name(path, p) for p in POINTS]
    return names
