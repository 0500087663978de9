"""One attention call of a Hugging Face model, read from what the call passes: its formula
(``records.formula``) and its mask, which ``"vt"``'s mask function hands over as the index
predicate transformers built it from (``RuleMask``) rather than a ``T x T`` tensor.

transformers' attention calls pass what makes a head non-plain: ``scaling``, ``softcap``,
``position_bias`` (T5's relative buckets), sinks (``s_aux``, or per-row ``sinks``) and the mask.
``read_call`` turns them into a ``Formula``; an argument it does not know (one the model's own
eager function takes by name) leaves the call unread, and the caller keeps that call's map
whole. ``attend_in_rows`` computes a call's output a block of query rows at a time with the
model's own function, so that no mask or score matrix of ``T x T`` is ever made.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn
from transformers.masking_utils import (
    _ignore_bidirectional_mask_sdpa,
    _ignore_causal_mask_sdpa,
    and_masks,
    eager_mask,
    padding_mask_function,
    prepare_padding_mask,
)

from viz_transformer.records.formula import Bias, Formula, Mask

# arguments whose meaning the formula carries (``sliding_window`` only tells fused kernels what
# the mask already says; ``dropout`` does nothing in eval mode)
KNOWN = frozenset(
    (
        "scaling",
        "dropout",
        "softcap",
        "sliding_window",
        "position_bias",
        "s_aux",
        "sinks",
        "is_causal",
    )
)
ROW_CELLS = 2**24  # heads x rows x keys of one block of a call computed in rows (64 MB float32)
Attend = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


@dataclass(frozen=True)
class Call:
    """One call of the attention function, as transformers made it: the attention ``module``,
    queries ``(B, H, n_q, d)``, keys and values ``(B, H_kv, n_k, d)``, the ``mask`` it received
    and its other arguments (``scaling``, ``softcap``, ``sliding_window``, ...)."""

    module: nn.Module
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    mask: torch.Tensor | None
    kwargs: dict[str, Any]

    def run(self, fn: Attend) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``fn`` (the model's eager function, or SDPA) on this call's arguments."""
        return fn(self.module, self.query, self.key, self.value, self.mask, **self.kwargs)


# ids of the configs of models whose class does not support SDPA: their modules' ``is_causal``
# may not say what their masks say (NLLB-MoE's and BigBird-Pegasus's decoders), so their masks
# are never left to SDPA's ``is_causal`` and their outputs come from their own eager function
_UNFUSED: set[int] = set()


def mark_unfused(model: nn.Module) -> None:
    """Remember that ``model`` (its every config) is not to run through SDPA, unless its class
    says it supports it (``_supports_sdpa``)."""
    if getattr(type(model), "_supports_sdpa", False):
        return
    for part in model.modules():
        if getattr(part, "config", None) is not None:
            _UNFUSED.add(id(part.config))


def fused(module: nn.Module) -> bool:
    """Whether ``module``'s calls may run through SDPA (``mark_unfused``)."""
    return id(getattr(module, "config", None)) not in _UNFUSED


class RuleMask(torch.Tensor):
    """A mask that is its predicate: ``(batch, 1, q, k)`` of zeros that take no memory (an
    expanded scalar), carrying the ``Mask`` it stands for. Any torch operation on it other than
    reading its shape, dtype or device (a model that slices or adds to its mask) gets the dense
    additive mask ``eager_mask`` builds, made once: right, only not small."""

    rule: Mask
    _make: Callable[[], torch.Tensor]
    _dense: torch.Tensor | None

    @staticmethod
    def __new__(
        cls, rule: Mask, shape: tuple[int, ...], dtype: torch.dtype, make: Callable[[], Any]
    ) -> RuleMask:
        data = torch.zeros((), dtype=dtype, device=rule.device).expand(shape)
        self = torch.Tensor._make_subclass(cls, data)
        self.rule, self._make, self._dense = rule, make, None
        return self

    def dense(self) -> torch.Tensor:
        """The additive mask eager attention would have received."""
        if self._dense is None:
            self._dense = self._make()
        return self._dense

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = getattr(func, "__name__", "")
        prop = getattr(getattr(func, "__self__", None), "__name__", "")
        meta = name in ("dim", "size", "numel") or (name == "__get__" and prop in _META)
        if not meta:
            args = tuple(a.dense() if isinstance(a, RuleMask) else a for a in args)
            kwargs = {
                k: v.dense() if isinstance(v, RuleMask) else v for k, v in (kwargs or {}).items()
            }
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


_META = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"})


def rule_mask(patterns_asked: bool, **kwargs: Any) -> torch.Tensor | None:
    """The mask of ``"vt"``: eager's dense additive mask when this thread asks for patterns
    (eager attention runs and adds it), None where SDPA needs none (no padding, a window wider
    than the input), else a ``RuleMask``. A model with a relative bias (T5) always gets one."""
    if patterns_asked or kwargs.get("use_vmap"):  # a vmap predicate may not broadcast
        return eager_mask(**kwargs)
    q_len, kv_len = kwargs["q_length"], kwargs["kv_length"]
    q_off, kv_off = kwargs.get("q_offset", 0), kwargs.get("kv_offset", 0)
    padding = prepare_padding_mask(kwargs.get("attention_mask"), kv_len, kv_off)
    relative = getattr(kwargs.get("config"), "relative_attention_num_buckets", None)
    local = kwargs.get("local_size")
    if relative is None and id(kwargs.get("config")) not in _UNFUSED:
        causal_skip = kwargs.get("allow_is_causal_skip", True) and _ignore_causal_mask_sdpa(
            padding, q_len, kv_len, q_off, kv_off, local
        )
        full_skip = kwargs.get("allow_is_bidirectional_skip") and _ignore_bidirectional_mask_sdpa(
            padding, kv_len, local
        )
        if causal_skip or full_skip:
            return None
    predicate = kwargs["mask_function"]
    if padding is not None:
        predicate = and_masks(predicate, padding_mask_function(padding))
    device = str(kwargs.get("device", "cpu"))
    rule = Mask(predicate, int(q_off), int(kv_off), n_q=q_len, device=device)
    shape = (kwargs["batch_size"], 1, q_len, kv_len)
    dense = {**kwargs, "allow_is_bidirectional_skip": False}  # a tensor, even with no padding
    return RuleMask(rule, shape, kwargs.get("dtype", torch.float32), lambda: eager_mask(**dense))


def own_eager(module: nn.Module, generic: Attend) -> Attend:
    """The model's own ``eager_attention_forward`` (from its modeling file), else ``generic``."""
    return getattr(sys.modules[type(module).__module__], "eager_attention_forward", generic)


def sdpa_causal(module: nn.Module, kwargs: dict[str, Any], q_len: int) -> bool:
    """Whether a call without a mask is causal, as SDPA decides it (never for a model that
    does not run through SDPA: its eager function adds no mask)."""
    if not fused(module):
        return False
    causal = kwargs.get("is_causal")
    return q_len > 1 and bool(getattr(module, "is_causal", True) if causal is None else causal)


def read_call(call: Call, eager: Attend) -> tuple[Formula | None, str]:
    """The formula of one call at batch element 0, or None and why it cannot be read.

    Args:
        call: its arguments; eager: the model's own eager function (its named parameters are
            what it reads).
    """
    module, query, mask, kwargs = call.module, call.query, call.mask, call.kwargs
    n_q, n_k = query.shape[2], call.key.shape[2]
    named = list(inspect.signature(eager).parameters)[5:]
    unknown = sorted(
        k for k, v in kwargs.items() if v is not None and k in named and k not in KNOWN
    )
    if unknown:
        return None, f"it passes {', '.join(unknown)}, which the tiles do not evaluate"
    if kwargs.get("dropout") and module.training:
        return None, "dropout is on (the model is training)"
    if isinstance(mask, RuleMask):
        rule: Mask | None = mask.rule
    elif mask is None:
        causal = sdpa_causal(module, kwargs, n_q)
        rule = Mask(causal=True, n_q=n_q) if causal else None
    elif mask.ndim == 4 and mask.shape[-1] == n_k and mask.shape[-2] in (1, n_q):
        rule = Mask(dense=mask[0], n_q=n_q)
    else:
        return None, f"its mask has shape {tuple(mask.shape)}"
    scaling = kwargs.get("scaling")
    scale = float(query.shape[-1] ** -0.5 if scaling is None else scaling)
    softcap = kwargs.get("softcap")
    return Formula(
        scale,
        None if softcap is None else float(softcap),
        rule,
        _bias(kwargs.get("position_bias"), n_q, n_k),
        _sinks(kwargs, n_q),
        (n_q, n_k),
    ), ""


def _bias(bias: torch.Tensor | None, n_q: int, n_k: int) -> Bias | None:
    """A position bias ``(B | 1, H | 1, n_q, n_k)`` at batch element 0, compressed to its
    diagonals when it has them; read once per tensor (T5 hands every layer the same one)."""
    if bias is None:
        return None
    seen = getattr(bias, "vt_bias", None)
    if seen is None:
        seen = Bias.of(bias[0].expand(-1, n_q, n_k).detach())
        bias.vt_bias = seen
    return seen


def _sinks(kwargs: dict[str, Any], n_q: int) -> torch.Tensor | None:
    """Sink logits ``(H, 1 | n_q)`` in float32: gpt-oss's ``s_aux`` ``(H,)``, or a per-row
    ``sinks`` ``(B, H, n_q, 1)``."""
    if kwargs.get("s_aux") is not None:
        return kwargs["s_aux"].detach().float().reshape(-1, 1)
    if kwargs.get("sinks") is not None:
        return kwargs["sinks"][0, :, :, 0].detach().float()
    return None


def mask_rows(
    mask: torch.Tensor | None, rows: torch.Tensor, n_k: int, batch: int, dtype: torch.dtype
) -> torch.Tensor | None:
    """The mask of some query rows, ``(batch, 1 | H, len(rows), n_k)``, as eager attention
    adds it (a ``RuleMask``'s predicate evaluated there: 0 seen, the dtype's minimum hidden);
    None: every key seen."""
    if not isinstance(mask, RuleMask):
        if mask is None or mask.shape[-2] == 1:  # none, or one row for every row
            return mask
        return mask.index_select(-2, rows.to(mask.device))
    rule, at = mask.rule, torch.arange(n_k, device=rows.device)
    b = torch.arange(batch, device=rule.device)[:, None, None, None]
    h = torch.zeros((), dtype=torch.long, device=rule.device)
    q = (rows.to(rule.device) + rule.q_offset)[None, None, :, None]
    kv = (at.to(rule.device) + rule.kv_offset)[None, None, None, :]
    seen = rule.predicate(b, h, q, kv).expand(batch, 1, len(rows), n_k)  # type: ignore[misc]
    low = torch.finfo(dtype).min
    return torch.where(seen.to(rows.device), 0.0, low).to(dtype)


def causal_rows(
    rows: torch.Tensor, n_q: int, n_k: int, batch: int, dtype: torch.dtype
) -> torch.Tensor:
    """The additive causal mask of some query rows (keys ``j <= i + n_k - n_q`` seen)."""
    at = torch.arange(n_k, device=rows.device)
    hidden = at[None, :] > rows[:, None] + (n_k - n_q)
    out = torch.zeros(len(rows), n_k, dtype=dtype, device=rows.device)
    return out.masked_fill_(hidden, torch.finfo(dtype).min).expand(batch, 1, -1, -1)


def row_kwargs(kwargs: dict[str, Any], rows: torch.Tensor, n_q: int) -> dict[str, Any]:
    """``kwargs`` with the tensors that have a row per query (a position bias, per-row sinks)
    cut to ``rows``."""
    out = dict(kwargs)
    for name in ("position_bias", "sinks"):
        t = kwargs.get(name)
        if isinstance(t, torch.Tensor) and t.ndim == 4 and t.shape[-2] == n_q:
            out[name] = t.index_select(-2, rows.to(t.device))
    return out


def attend_rows(
    fn: Attend, call: Call, rows: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``fn`` (the model's eager function, or SDPA) on some query rows of ``call``, with their
    mask."""
    batch, _, n_q, _ = call.query.shape
    n_k = call.key.shape[2]
    if call.mask is None and sdpa_causal(call.module, call.kwargs, n_q):
        part = causal_rows(rows, n_q, n_k, batch, call.query.dtype)
    else:
        part = mask_rows(call.mask, rows, n_k, batch, call.query.dtype)
    q = call.query.index_select(2, rows)
    return replace(call, query=q, mask=part, kwargs=row_kwargs(call.kwargs, rows, n_q)).run(fn)


def attend_in_rows(fn: Attend, call: Call) -> torch.Tensor:
    """A call's output ``(B, n_q, H, d_v)``, ``ROW_CELLS`` heads x rows x keys at a time."""
    batch, heads, n_q, _ = call.query.shape
    step = max(1, ROW_CELLS // max(1, batch * heads * call.key.shape[2]))
    outs = []
    for r0 in range(0, n_q, step):
        rows = torch.arange(r0, min(r0 + step, n_q), device=call.query.device)
        outs.append(attend_rows(fn, call, rows)[0])
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)
