"""What the Q, K, V walkthrough reads from a Hugging Face model of a family it knows
(``qkv_families``), in one pass, as ``Needs`` asks: at the blocks asked, each block's input and
what its pre-attention norm (the model's own module) makes of it, read by forward pre-hooks of
this thread (no ``output_hidden_states``: every layer's states would stay on the device); the
queries, keys and heads' outputs of the layers asked from the attention function's hook points,
in the model's dtype; the pattern only where it is named; the weights a layer at a time when
read (``LayerWeights``); for RoPE, the rotary tables. Nothing is added to the shared module
beyond this pass's hooks, so sessions never mix; ``analysis.walkthrough`` only sees the
``KindCapture`` record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf import inputs as hf_inputs
from viz_transformer.models.hf.heads import accepts, lens_points
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.hf.qkv_families import Family, blocks_of, family_of
from viz_transformer.models.results import QKV_NOTE
from viz_transformer.networks.hooks import collect_calls
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Layers, LayerWeights, Needs

STACKS = {
    "decoder": ("decoder-only", "the decoder's masked self-attention"),
    "encoder": ("encoder-only", "the encoder's self-attention"),
}


def _numpy(t: torch.Tensor) -> np.ndarray:
    """float32 numpy on the CPU (every caller passes a tensor of its own)."""
    return t.detach().to("cpu", torch.float32).numpy()


def _weights(family: Family, blocks: list[tuple[nn.Module, nn.Module]]) -> dict[str, Any]:
    """``w_q`` .. ``b_o`` (and the pre-attention norm's ``norm``, ``norm_bias``), each read from
    the model a layer at a time when asked (``LayerWeights``): a capture restacks nothing."""

    def fetch(name: str) -> Callable[[int], torch.Tensor]:
        def one(i: int) -> torch.Tensor:
            block, attn = blocks[i]
            if name.startswith("norm"):
                norm = getattr(block, family.norm or "")
                return norm.weight if name == "norm" else norm.bias
            w, b = family.projections(block, attn)[name[-1]]
            return w if name[0] == "w" else b

        return one

    names = [f"{wb}_{p}" for p in "qkvo" for wb in "wb"]
    if family.norm is not None:
        names += ["norm", "norm_bias"] if family.norm_kind == "layer" else ["norm"]
    first = {n: fetch(n)(0).shape for n in names}
    return {n: LayerWeights(fetch(n), len(blocks), tuple(first[n])) for n in names}


def _epsilon(norm: nn.Module) -> float:
    eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", None)
    return float(eps or 1e-6)


def _point_names(model: HFParts, kind: AttentionKind, needs: Needs) -> dict[str, dict[int, str]]:
    """The hook points one pass reads, by layer, as ``needs`` asks: ``pattern`` (eager attention
    runs where it is asked), ``q``, ``k`` and ``z`` where the ``"vt"`` attention function runs
    (the model's own queries and keys after rotary positions, and the heads' outputs), and
    ``final``, the last block's output, for a decoder (what its final norm reads)."""
    bases = {i: n.removesuffix(".hook_pattern") for i, n in enumerate(model.names[kind])}
    parts = "qkz" if model.module.config._attn_implementation == hf_attention.IMPLEMENTATION else ""
    points = {
        p: {i: f"{b}.hook_{p}" for i, b in bases.items() if needs.keeps(p, i)}
        for p in ("pattern", *parts)
    }
    points = {p: by_layer for p, by_layer in points.items() if by_layer}
    if kind == "decoder" and "final" in needs.layers:
        points["final"] = {len(bases): lens_points(model)[-1]}
    return points


def _inputs(
    model: HFParts, ids: list[int], resid0: torch.Tensor, rows: list[int]
) -> tuple[np.ndarray, ...] | None:
    """Token and position parts ``[T, d]`` of layer 0's block input of a pre-norm model with
    added (learned) positions, when they sum to what the model computed (``resid0``: its
    ``rows``); None otherwise."""
    table = model.position_table()
    if table is None:
        return None
    emb = hf_inputs.input_embedding(model.module, model.spec.positions, table)
    index = torch.tensor(ids, device=emb.weight.device)
    content = _numpy(emb.weight[index] * emb.scale)  # (T, d)
    position = table[: len(ids)]
    if position.shape != content.shape:
        return None
    added = np.allclose((content + position)[rows], _numpy(resid0), atol=1e-5, rtol=1e-4)
    return (content, position) if added else None


def _captured(
    calls: dict[str, list[Any]], points: dict[str, dict[int, str]], n: int, rows: list[int] | None
) -> dict[str, Layers]:
    """``[L, h, T, .]`` per point (``q`` unscaled, as our own networks record it), each kept layer
    as the model made it (its dtype, its device); ``z`` at ``rows`` only where ``rows`` is set."""
    return {
        p: Layers(
            {i: calls[name][0] for i, name in by_layer.items()}, n, (), rows if p == "z" else None
        )
        for p, by_layer in points.items()
        if p != "final"
    }


def _streams(
    family: Family, blocks: list[tuple[nn.Module, nn.Module]], needs: Needs, rows: list[int] | None
) -> tuple[dict[int, torch.Tensor], dict[int, torch.Tensor], list[Any]]:
    """Forward pre-hooks on the blocks ``needs`` reads (this thread's calls only: the module is
    shared): each keeps the block's input (``resid``, at ``rows``) and what its pre-attention norm
    (the model's own module) makes of it (``x``), in the model's dtype. Returns the two dicts,
    filled by the pass, and the hooks' handles."""
    x: dict[int, torch.Tensor] = {}
    resid: dict[int, torch.Tensor] = {}
    mine = threading.get_ident()
    pre = family.norm is not None

    def reader(i: int, block: nn.Module) -> Callable[..., None]:
        def read(_module: nn.Module, args: tuple[Any, ...], kwargs: Any = None) -> None:
            # another thread's pass may call it (without kwargs, if removed meanwhile): ignored
            if threading.get_ident() != mine:
                return
            hidden = (args[0] if args else kwargs["hidden_states"]).detach()  # (1, T, d)
            if pre and needs.keeps("resid", i):
                resid[i] = hidden[0] if rows is None else hidden[0, rows]
            if needs.keeps("x", i):
                x[i] = getattr(block, family.norm)(hidden)[0] if pre else hidden[0]

        return read

    wanted = [i for i in range(len(blocks)) if needs.keeps("x", i) or needs.keeps("resid", i)]
    handles = [
        blocks[i][0].register_forward_pre_hook(reader(i, blocks[i][0]), with_kwargs=True)
        for i in wanted
    ]
    return x, resid, handles


def _run(
    model: HFParts,
    family: Family,
    blocks: list[tuple[nn.Module, nn.Module]],
    ids: list[int],
    points: dict[str, dict[int, str]],
    needs: Needs,
) -> tuple[dict[str, list[Any]], dict[int, torch.Tensor], dict[int, torch.Tensor]]:
    """One pass over ``ids`` (no key/value cache, no ``output_hidden_states``: every layer's
    states would stay on the device) reading the hook points of ``points`` and, at the blocks
    ``needs`` names, their inputs (``_streams``)."""
    batch = torch.tensor([ids], device=model.device)  # (1, T)
    # the output layer's logits are not read: one row of them, where the model allows it
    keep = {"logits_to_keep": 1} if accepts(model.module, "logits_to_keep") else {}
    keep |= {"use_cache": False} if accepts(model.module, "use_cache") else {}
    rows = needs.rows_of("resid")
    at = None if rows is None else sorted(rows)
    on_host = [n for p in ("pattern", "final") for n in points.get(p, {}).values()]
    kept = [n for p in "qk" for n in points.get(p, {}).values()]
    z = list(points.get("z", {}).values())
    x, resid, handles = _streams(family, blocks, needs, at)
    try:
        with (
            torch.no_grad(),
            collect_calls(model.module, on_host) as calls,
            collect_calls(model.module, kept, host=False) as qk,
            collect_calls(model.module, z, _rows(at), host=False) as zs,
        ):
            model.module(input_ids=batch, attention_mask=torch.ones_like(batch), **keep)
    finally:
        for handle in handles:
            handle.remove()
    return {**calls, **qk, **zs}, x, resid


def _rows(at: list[int] | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """What ``collect_calls`` keeps of the heads' outputs ``(1, h, T, d_k)``: ``at`` or every
    row."""
    return (lambda t: t[0]) if at is None else (lambda t: t[0][:, at])


def qkv_run(
    model: HFParts,
    text: str,
    kind: AttentionKind,
    target: str | None = None,
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
    blocks = blocks_of(model, family)
    needs = needs or Needs()
    points = _point_names(model, kind, needs)
    calls, x, resid = _run(model, family, blocks, ids, points, needs)
    n = len(blocks)
    rows = needs.rows_of("resid")
    at = None if rows is None else sorted(rows)
    d = int(model.module.config.hidden_size)
    tokens = model.token_labels(ids)
    config = model.module.config
    n_heads = int(config.num_attention_heads)
    scale = model.head_scale()
    pre = family.norm is not None
    eps = _epsilon(getattr(blocks[0][0], family.norm)) if pre else 0.0
    xs = Layers(x, n, (len(ids), d))  # what each attention reads
    first = at or list(range(len(ids)))
    return KindCapture(
        model.name,
        kind,
        tokens,
        tokens,
        n_heads,
        scale.scaled,
        xs,
        xs,
        None,
        None,
        _weights(family, blocks),
        _captured(calls, points, n, at),  # "q", "k", "z", "pattern": (L, H, T, .)
        resid=Layers(resid, n, (len(first), d), at) if pre else None,
        norm_eps=eps,
        rotary=model.rotary_tables(len(ids)),
        kv_heads=int(getattr(config, "num_key_value_heads", None) or n_heads),
        norm=family.norm_kind,
        final=calls[points["final"][n]][0] if "final" in points and pre else None,
        inputs=_inputs(model, ids, resid[0], first) if pre and 0 in resid else None,
    )
