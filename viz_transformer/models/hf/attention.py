"""One attention function for every Hugging Face model we load: fused SDPA unless this thread
asks for the weights or for the queries and keys.

transformers 5 routes a model's attention through ``ALL_ATTENTION_FUNCTIONS[impl]``. We register
``"vt"`` there, so one cached model serves every Streamlit session whatever each one captures:

- no capture active in this thread: ``sdpa_attention_forward``, the fused kernel (fast, and it
  never holds a ``heads x n x n`` matrix, which long inputs need);
- ``<module>.hook_pattern`` active: the model's own ``eager_attention_forward`` (from its modeling
  file), whose weights the permanent forward hooks of ``hf_names`` pass on;
- ``<module>.hook_q`` / ``hook_k`` active: the queries and the keys as the model made them (after
  rotary position embeddings, before grouped-query repetition, in the model's dtype; the scale the
  model multiplies their product by is left on the module as ``vt_scaling``) go to ``dispatch``;
  ``LazyPatterns`` computes each head from them when asked, scale and softmax in float32.

The choice reads the per-thread hook context (``networks.hooks``), never a module flag. So does
the mask: a dense additive ``T x T`` mask (2 GB at 32,768 tokens) is made only when a pattern is
asked (eager attention adds it) or when some token is padding; otherwise SDPA masks causally by
itself (``vt_mask``).
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface, PretrainedConfig
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask, sdpa_mask

from viz_transformer.networks.hooks import active_hook_names, dispatch, is_active, point_name

IMPLEMENTATION = "vt"
# config keys of attention that is not softmax(q k^T * scale + causal mask): such models keep
# their weights whole (no lazy per-head patterns)
NOT_PLAIN = (
    "sliding_window", "attn_logit_softcapping", "alibi", "use_alibi", "position_biased_input",
)  # fmt: skip


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


def _own_eager(module: nn.Module) -> Any:
    return getattr(sys.modules[type(module).__module__], "eager_attention_forward", _generic_eager)


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
    if base is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if is_active(point_name(base, "hook_q")):
        scaling = kwargs.get("scaling")
        module.vt_scaling = float(query.size(-1) ** -0.5 if scaling is None else scaling)
        dispatch(point_name(base, "hook_q"), query)  # unscaled: no rounding in a half dtype
        dispatch(point_name(base, "hook_k"), key)
    value = dispatch(point_name(base, "hook_v"), value)  # (B, h_kv, Tk, d_k), bias included
    attend = _own_eager(module) if is_active(point_name(base, "hook_pattern")) else None
    out, weights = (attend or sdpa_attention_forward)(
        module, query, key, value, attention_mask, **kwargs
    )  # out (B, Tq, h, d_k)
    z_name = point_name(base, "hook_z")
    if is_active(z_name):  # the heads' outputs before W^O, (B, h, Tq, d_k) as in our networks
        out = dispatch(z_name, out.transpose(1, 2)).transpose(1, 2)
    return out, weights


def vt_mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """The mask of ``"vt"``: None where SDPA needs none (no padding, and no pattern asked in this
    thread, so no eager attention runs), else eager's additive mask, which both paths read. T5's
    relative bias is added to its mask: it always gets one."""
    relative = getattr(kwargs.get("config"), "relative_attention_num_buckets", None)
    if relative is None and not _patterns_asked():
        skip = {k: v for k, v in kwargs.items() if k != "dtype"}
        if sdpa_mask(*args, **skip) is None:
            return None
    return eager_mask(*args, **kwargs)


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
    points ``vt_attention_forward`` dispatches to (q, k, v and the heads' outputs z)."""
    names = []
    for entries in modules.values():
        for path, module, _ in entries:
            for part in module.modules():  # T5 hooks the layer; its SelfAttention calls attention
                part.vt_hook_base = path
            names += [point_name(path, p) for p in ("hook_q", "hook_k", "hook_v", "hook_z")]
    return names


def plain_attention(config: PretrainedConfig, positions: str) -> bool:
    """True when every head is ``softmax(q k^T * scale + causal mask)`` of the queries and keys
    the attention function receives (no relative bias, ALiBi, soft-capping or sliding window), so
    ``LazyPatterns`` recomputes exactly what eager attention gives."""
    if positions == "relative":
        return False
    cfg = config.to_dict()
    parts = [cfg, *(v for v in cfg.values() if isinstance(v, dict))]
    return not any(part.get(key) for part in parts for key in NOT_PLAIN)
