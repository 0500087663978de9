"""What the Q, K, V walkthrough reads from a Hugging Face model of a family it knows: each block's
input (the model's own ``hidden_states``), what its pre-attention norm makes of it (computed by the
model's own norm module), the attention weights from the permanent pattern hook points, the
weights of every layer and, for RoPE, the rotary tables. Nothing is added to the shared module,
so sessions never mix.

What differs between families is one ``Family`` each (where a block keeps its norm and its
projections); ``analysis.walkthrough`` only sees the ``KindCapture`` record:

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

import numpy as np
import torch
from torch import nn

from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf import inputs as hf_inputs
from viz_transformer.models.hf.heads import accepts, lens_points
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.results import QKV_NOTE
from viz_transformer.networks.hooks import collect_calls
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Layers, Needs, PreNorm

Pair = tuple[torch.Tensor, torch.Tensor]  # (w (d_in, d_out), b (d_out,)): x @ w + b, on device
LLAMA_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
STACKS = {
    "decoder": ("decoder-only", "the decoder's masked self-attention"),
    "encoder": ("encoder-only", "the encoder's self-attention"),
}


def _numpy(t: torch.Tensor) -> np.ndarray:
    """float32 numpy on the CPU: one transfer for the whole (stacked) tensor, whose memory it
    shares (every caller passes a tensor of its own: a stack, a product, this pass's states)."""
    return t.detach().to("cpu", torch.float32).numpy()


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


def _blocks(model: HFParts, family: Family) -> list[tuple[nn.Module, nn.Module]]:
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
        blocks = _blocks(model, family)
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


@torch.no_grad()
def _weights(family: Family, blocks: list[tuple[nn.Module, nn.Module]]) -> dict[str, np.ndarray]:
    per_layer = [family.projections(block, attn) for block, attn in blocks]
    stacked: dict[str, torch.Tensor] = {}  # stacked on the device, then one transfer each
    for part in "qkvo":
        stacked[f"w_{part}"] = torch.stack([p[part][0] for p in per_layer])
        stacked[f"b_{part}"] = torch.stack([p[part][1] for p in per_layer])
    if family.norm is not None:
        norms = [getattr(block, family.norm) for block, _ in blocks]
        stacked["norm"] = torch.stack([n.weight for n in norms])
        if family.norm_kind == "layer":
            stacked["norm_bias"] = torch.stack([n.bias for n in norms])
    return {name: _numpy(t) for name, t in stacked.items()}


def _epsilon(norm: nn.Module) -> float:
    eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", None)
    return float(eps or 1e-6)


def _point_names(model: HFParts, kind: AttentionKind, needs: Needs) -> dict[str, list[str]]:
    """The points one pass reads, by layer, as ``needs`` asks: ``pattern`` (eager attention runs
    where it is asked), ``q``, ``k`` and ``z`` where the ``"vt"`` attention function runs (the
    model's own queries and keys after rotary positions, and the heads' outputs), and ``final``,
    the last block's output, for a decoder (what its final norm reads)."""
    bases = {i: n.removesuffix(".hook_pattern") for i, n in enumerate(model.names[kind])}
    parts = "qkz" if model.module.config._attn_implementation == hf_attention.IMPLEMENTATION else ""
    points = {
        p: {i: f"{b}.hook_{p}" for i, b in bases.items() if needs.keeps(p, i)}
        for p in ("pattern", *parts)
    }
    points = {p: by_layer for p, by_layer in points.items() if by_layer}
    if kind == "decoder":
        points["final"] = {len(bases): lens_points(model)[-1]}
    return points


def _inputs(model: HFParts, ids: list[int], resid0: torch.Tensor) -> tuple[np.ndarray, ...] | None:
    """Token and position parts ``[T, d]`` of layer 0's block input of a pre-norm model with
    added (learned) positions, when they sum to what the model computed; None otherwise."""
    table = model.position_table()
    if table is None:
        return None
    emb = hf_inputs.input_embedding(model.module, model.spec.positions, table)
    index = torch.tensor(ids, device=emb.weight.device)
    content = _numpy(emb.weight[index] * emb.scale)  # (T, d)
    position = table[: len(ids)]
    if position.shape != content.shape:
        return None
    added = np.allclose(content + position, _numpy(resid0), atol=1e-5, rtol=1e-4)
    return (content, position) if added else None


def _captured(
    calls: dict[str, list[np.ndarray]], points: dict[str, dict[int, str]], n_layers: int
) -> dict[str, np.ndarray | Layers]:
    """``[L, h, T, .]`` per point (``q`` unscaled, as our own networks record it), a ``Layers``
    where some layers were left out."""
    out: dict[str, np.ndarray | Layers] = {}
    for p, by_layer in points.items():
        if p == "final":
            continue
        got = {i: calls[n][0] for i, n in by_layer.items()}
        out[p] = np.stack(list(got.values())) if len(got) == n_layers else Layers(got, n_layers)
    return out


def _run(
    model: HFParts,
    family: Family,
    blocks: list[tuple[nn.Module, nn.Module]],
    ids: list[int],
    names: list[str],
    layers: list[int],
) -> tuple[dict[str, list[np.ndarray]], list[torch.Tensor], dict[int, torch.Tensor]]:
    """One pass over ``ids`` reading the hook points ``names`` (no key/value cache): their calls,
    each block's input ``(T, d)`` and, at ``layers``, what its pre-attention norm (the model's own
    module) makes of it."""
    batch = torch.tensor([ids], device=model.device)  # (1, T)
    # the output layer's logits are not read: one row of them, where the model allows it
    keep = {"logits_to_keep": 1} if accepts(model.module, "logits_to_keep") else {}
    keep |= {"use_cache": False} if accepts(model.module, "use_cache") else {}
    with torch.no_grad(), collect_calls(model.module, names) as calls:
        out = model.module(
            input_ids=batch,
            attention_mask=torch.ones_like(batch),
            output_hidden_states=True,
            **keep,
        )
        resid = [h[0] for h in out.hidden_states[: len(blocks)]]  # each block's input (T, d)
        norms = [getattr(b, family.norm) if family.norm else nn.Identity() for b, _ in blocks]
        normed = {i: norms[i](resid[i][None])[0] for i in layers}
    return calls, resid, normed


def _host(by_layer: dict[int, torch.Tensor], n_layers: int, d: int) -> np.ndarray | Layers:
    """``[L, T, d]`` float32 on the host, or a ``Layers`` of the layers kept."""
    if len(by_layer) == n_layers:
        return _numpy(torch.stack([by_layer[i] for i in range(n_layers)]))
    return Layers({i: _numpy(t) for i, t in by_layer.items()}, n_layers, (-1, d))


def qkv_run(
    model: HFParts,
    text: str,
    kind: AttentionKind,
    target: str | None,
    needs: Needs | None = None,
) -> KindCapture:
    """One pass over ``text`` (for a decoder, then ``target``, read as its continuation): the
    ``KindCapture`` of ``kind``, with ``x_q`` = ``x_kv`` what the attention reads (each block's
    input through the model's own pre-attention norm where it has one), ``resid`` the block's
    input before that norm (None without one), ``captured["pattern"]`` and, where the ``"vt"``
    attention function runs, ``captured["q"]``, ``["k"]``, ``["z"]`` from its hook points; of
    these only what ``needs`` asks (None: everything).

    Raises:
        ValueError: not a family the walkthrough knows (``QKV_NOTE``), a kind the model lacks,
            or text the model cannot read.
    """
    family = family_of(model)
    if family is None:
        raise ValueError(QKV_NOTE)
    if kind != family.kind:
        stack, its = STACKS[family.kind]
        raise ValueError(
            f"{model.name} is {stack}: its one attention kind is {its}; pick that kind."
        )
    if target and kind == "decoder":
        sep = "" if text[-1:].isspace() or target[:1].isspace() else " "
        text = f"{text}{sep}{target}"
    ids = model.encode_text(text)
    blocks = _blocks(model, family)
    points = _point_names(model, kind, needs or Needs())
    names = [n for by_layer in points.values() for n in by_layer.values()]
    kept = [i for i in range(len(blocks)) if (needs or Needs()).keeps("resid", i)]
    calls, resid, normed = _run(model, family, blocks, ids, names, kept)
    d = resid[0].shape[-1]
    x = _host(normed, len(blocks), d)  # (L, T, d): what each attention reads
    tokens = model.token_labels(ids)
    config = model.module.config
    n_heads = int(config.num_attention_heads)
    scale = model.head_scale()
    pre = family.norm is not None
    eps = _epsilon(getattr(blocks[0][0], family.norm)) if pre else 0.0
    captured = _captured(calls, points, len(blocks))  # "pattern": (L, H, T, T)
    return KindCapture(
        model.name,
        kind,
        tokens,
        tokens,
        n_heads,
        scale.scaled,
        x,
        x,
        None,
        None,
        _weights(family, blocks),
        captured,
        resid=_host({i: resid[i] for i in kept}, len(blocks), d) if pre else None,
        norm_eps=eps,
        rotary=model.rotary_tables(len(ids)),
        kv_heads=int(getattr(config, "num_key_value_heads", None) or n_heads),
        norm=family.norm_kind,
        final=calls[points["final"][len(blocks)]][0] if "final" in points and pre else None,
        inputs=_inputs(model, ids, resid[0]) if pre else None,
    )
