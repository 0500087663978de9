"""What the Q, K, V walkthrough reads from a Hugging Face Llama-family decoder (Llama, SmolLM2,
Mistral, Qwen2): each block's input from the permanent residual-stream hook points, its
pre-attention RMSNorm output computed by the model's own norm module, the weights of every
layer and the rotary tables. Nothing is added to the shared module, so sessions never mix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from viz_transformer.models.results import QKV_NOTE, QKVRun
from viz_transformer.networks.hooks import collect_calls
from viz_transformer.records.kinds import AttentionKind

HFModel = Any  # models.hf.model.HFModel, which imports this module
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _blocks(model: HFModel) -> list[tuple[nn.Module, nn.Module]]:
    """(decoder layer, its attention module) per layer, from the pattern hook names."""
    out = []
    for pattern in model.names.get("decoder", []):
        path = pattern.removesuffix(".hook_pattern")
        layer_path = path.rsplit(".", 1)[0]
        out.append((model.module.get_submodule(layer_path), model.module.get_submodule(path)))
    return out


def supports(model: HFModel) -> bool:
    """A decoder-only model with rotary positions whose blocks are Llama's: an
    ``input_layernorm`` then an attention module with ``q_proj`` .. ``o_proj`` and no q/k norm."""
    if list(model.names) != ["decoder"] or model.spec.positions != "rotary":
        return False
    blocks = _blocks(model)
    return bool(blocks) and all(
        hasattr(layer, "input_layernorm")
        and all(hasattr(attn, p) for p in PROJECTIONS)
        and not hasattr(attn, "q_norm")
        for layer, attn in blocks
    )


def _matrix(lin: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    """``x @ w + b`` form: the transpose of ``nn.Linear.weight`` and the bias (zeros if none)."""
    w = lin.weight.detach().to("cpu", torch.float32).numpy().T.copy()  # (d_in, d_out)
    if lin.bias is None:
        return w, np.zeros(w.shape[1], np.float32)
    return w, lin.bias.detach().to("cpu", torch.float32).numpy().copy()


def _weights(blocks: list[tuple[nn.Module, nn.Module]]) -> dict[str, np.ndarray]:
    weights: dict[str, np.ndarray] = {}
    for part in "qkvo":
        pairs = [_matrix(getattr(attn, f"{part}_proj")) for _, attn in blocks]
        weights[f"w_{part}"] = np.stack([w for w, _ in pairs])
        weights[f"b_{part}"] = np.stack([b for _, b in pairs])
    gains = [layer.input_layernorm.weight.detach() for layer, _ in blocks]
    weights["norm"] = np.stack([g.to("cpu", torch.float32).numpy() for g in gains])
    return weights


def qkv_run(model: HFModel, text: str, kind: AttentionKind, target: str | None) -> QKVRun:
    """One pass over ``text`` (then ``target``, read as its continuation): see ``QKVRun``.

    Raises:
        ValueError: not a Llama-family decoder, a kind other than ``"decoder"``, or text the
            model cannot read.
    """
    if not supports(model):
        raise ValueError(QKV_NOTE)
    if kind != "decoder":
        raise ValueError(
            f"{model.name} is decoder-only: its one attention kind is the decoder's masked "
            "self-attention; pick that kind."
        )
    if target:
        sep = "" if text[-1:].isspace() or target[:1].isspace() else " "
        text = f"{text}{sep}{target}"
    ids = model.encode_text(text)
    blocks = _blocks(model)
    streams = [n for n in model.module.extra_hook_names if n.endswith(".hook_resid_post")]
    batch = torch.tensor([ids], device=model.device)  # (1, T)
    with torch.no_grad(), collect_calls(model.module, [*model.names["decoder"], *streams]) as calls:
        embedded = model.module.get_input_embeddings()(batch)  # (1, T, d)
        model.module(input_ids=batch, attention_mask=torch.ones_like(batch))
        resid = [embedded[0]]  # the block inputs: embeddings, then each earlier block's output
        resid += [torch.tensor(calls[n][0], device=embedded.device) for n in streams[:-1]]
        normed = [
            layer.input_layernorm(r.to(embedded.dtype)[None])[0]
            for (layer, _), r in zip(blocks, resid, strict=True)
        ]
    cache = {
        "resid": np.stack([r.to("cpu", torch.float32).numpy() for r in resid]),
        "x": np.stack([x.to("cpu", torch.float32).numpy() for x in normed]),
        "pattern": np.stack([calls[n][0] for n in model.names["decoder"]]),
    }
    config = model.module.config
    norm = blocks[0][0].input_layernorm
    eps = getattr(norm, "variance_epsilon", None) or getattr(norm, "eps", None) or 1e-6
    tokens = model.token_labels(ids)
    return QKVRun(
        cache, (), tokens, True, weights=_weights(blocks), rotary=model.rotary_tables(len(ids)),
        n_heads=int(config.num_attention_heads),
        kv_heads=int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads),
        norm_eps=float(eps),
    )  # fmt: skip
