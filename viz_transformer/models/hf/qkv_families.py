"""Where each Hugging Face family the Q, K, V walkthrough knows keeps the parts of a block
(``Family``: its pre-attention norm and its projections, found from the attention module the
pattern hook point sits on), and which family a loaded model is (``family_of``). One pass's
capture is ``models/hf/qkv.py``'s.

- Llama family (Llama, SmolLM2, Mistral, Qwen2): pre-norm, RMSNorm ``input_layernorm``,
  ``q_proj`` .. ``o_proj`` without biases, rotary positions;
- GPT-2: pre-norm, LayerNorm ``ln_1`` (gain and bias), one fused ``c_attn`` Conv1D holding
  [W_Q | W_K | W_V] and ``c_proj`` (Conv1D weights are already ``x @ W + b``), learned positions;
- BERT family (BERT, MiniLM): post-norm, no norm before attention, ``attention.self.query`` ..
  ``value`` and ``attention.output.dense`` with biases, absolute learned positions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from viz_transformer.models.hf.parts import HFParts
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import PreNorm

Pair = tuple[torch.Tensor, torch.Tensor]  # (w (d_in, d_out), b (d_out,)): x @ w + b, on device
LLAMA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _linear(lin: nn.Module) -> Pair:
    """``x @ w + b`` form of an ``nn.Linear``: its weight transposed, its bias (zeros if none)."""
    w = lin.weight.detach().T  # (d_in, d_out)
    bias = lin.bias
    return w, torch.zeros(w.shape[1], dtype=w.dtype, device=w.device) if bias is None else bias


def _conv1d(conv: nn.Module) -> Pair:
    """GPT-2's ``Conv1D`` already stores ``(d_in, d_out)``: ``x @ weight + bias``."""
    return conv.weight.detach(), conv.bias.detach()


@dataclass(frozen=True)
class Family:
    """Where one family keeps the parts of a block, found from its attention module (the module
    the pattern hook point sits on).

    Attributes:
        kind: its one attention kind; positions: the ``ModelSpec.positions`` it needs.
        up: path levels from the attention module up to its block.
        norm: the block's pre-attention norm attribute, None for post-norm; norm_kind: which.
        fits: ``fits(block, attn, config)``: the modules and config are this family's.
        projections: ``projections(block, attn)`` -> {"q", "k", "v", "o"} -> ``Pair``.
    """

    kind: AttentionKind
    positions: str
    up: int
    norm: str | None
    norm_kind: PreNorm
    fits: Callable[[nn.Module, nn.Module, Any], bool]
    projections: Callable[[nn.Module, nn.Module], dict[str, Pair]]


def _gpt2_projections(block: nn.Module, attn: nn.Module) -> dict[str, Pair]:
    w, b = _conv1d(attn.c_attn)  # (d, 3d): [W_Q | W_K | W_V], the order GPT-2 splits them in
    parts = zip("qkv", w.chunk(3, dim=1), b.chunk(3), strict=True)
    return {**{p: (wp, bp) for p, wp, bp in parts}, "o": _conv1d(attn.c_proj)}


FAMILIES = (
    Family(  # Llama, SmolLM2, Mistral, Qwen2 (no q/k norm: Qwen3, OLMo2 have one)
        "decoder",
        "rotary",
        1,
        "input_layernorm",
        "rms",
        lambda block, attn, config: (
            all(hasattr(attn, p) for p in LLAMA_PROJECTIONS)
            and hasattr(block, "input_layernorm")
            and not hasattr(attn, "q_norm")
        ),
        lambda block, attn: {p: _linear(getattr(attn, f"{p}_proj")) for p in "qkvo"},
    ),
    Family(  # GPT-2 (a layer-dependent score scale is not Eq. 1's: refused)
        "decoder",
        "learned",
        1,
        "ln_1",
        "layer",
        lambda block, attn, config: (
            hasattr(attn, "c_attn")
            and hasattr(attn, "c_proj")
            and isinstance(getattr(block, "ln_1", None), nn.LayerNorm)
            and not getattr(attn, "is_cross_attention", False)
            and not getattr(config, "scale_attn_by_inverse_layer_idx", False)
        ),
        _gpt2_projections,
    ),
    Family(  # BERT, MiniLM: the pattern hook sits on attention.self, the block two levels up
        "encoder",
        "learned",
        2,
        None,
        "none",
        lambda block, attn, config: (
            all(hasattr(attn, p) for p in ("query", "key", "value"))
            and hasattr(getattr(block.attention, "output", None), "dense")
            and not getattr(config, "is_decoder", False)
        ),
        lambda block, attn: {
            "q": _linear(attn.query),
            "k": _linear(attn.key),
            "v": _linear(attn.value),
            "o": _linear(block.attention.output.dense),
        },
    ),
)


def blocks_of(model: HFParts, family: Family) -> list[tuple[nn.Module, nn.Module]]:
    """(block, its attention module) per layer of ``family.kind``, from the pattern hook names."""
    out = []
    for pattern in model.names.get(family.kind, []):
        path = pattern.removesuffix(".hook_pattern")
        block_path = path.rsplit(".", family.up)[0]
        out.append((model.module.get_submodule(block_path), model.module.get_submodule(path)))
    return out


def _fits(model: HFParts, family: Family) -> bool:
    if list(model.names) != [family.kind] or model.spec.positions != family.positions:
        return False
    try:
        blocks = blocks_of(model, family)
        config = model.module.config
        return bool(blocks) and all(family.fits(b, a, config) for b, a in blocks)
    except AttributeError:  # a path or module this family does not have
        return False


def family_of(model: HFParts) -> Family | None:
    """The family whose modules ``model`` has, None when the walkthrough cannot read it."""
    return next((f for f in FAMILIES if _fits(model, f)), None)


def supports(model: HFParts) -> bool:
    """A single-stack model whose blocks are a known family's (BART, Marian, T5 and any other
    model get ``QKV_NOTE``)."""
    return family_of(model) is not None
