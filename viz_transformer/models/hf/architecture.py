"""A Hugging Face model's architecture summary, read from its config under the names the families
use (``intermediate_size`` or ``d_ff`` or ``decoder_ffn_dim``, ``hidden_act`` or
``activation_function``, ...) and from its modules (``models.architecture``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from transformers import PretrainedConfig

from viz_transformer.models.architecture import summarize
from viz_transformer.models.hf.inputs import head_scale
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.kinds import AttentionKind

FFN_WIDTHS = ("intermediate_size", "d_ff", "decoder_ffn_dim", "ffn_dim", "n_inner")
ACTIVATIONS = ("hidden_act", "activation_function", "dense_act_fn", "feed_forward_proj")
NO_LIMIT = 10**7  # tokenizers without a limit say 1e30
HEADS = ("decoder_attention_heads", "num_attention_heads")  # the decoder's when it has its own


def _first(config: PretrainedConfig, keys: tuple[str, ...]) -> Any:  # a config value
    return next((v for k in keys if (v := getattr(config, k, None)) is not None), None)


def rope_theta(config: PretrainedConfig) -> float | None:
    """The rotary base θ: ``rope_parameters["rope_theta"]`` (transformers 5) or ``rope_theta``."""
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    return theta if theta is not None else getattr(config, "rope_theta", None)


def positions_text(model: HFParts) -> str:
    """How positions enter this model, in words, with the sizes its config and tables give."""
    config, kind = model.module.config, model.spec.positions
    if kind == "rotary":
        return (
            f"rotary (RoPE, θ = {rope_theta(config):g}): q and k rotated by their position in "
            "every layer; nothing added to the token embeddings"
        )
    if kind == "relative":
        buckets = getattr(config, "relative_attention_num_buckets", "?")
        return f"relative position bias added to the scores ({buckets} buckets); nothing added"
    if kind == "learned":
        table = model.position_table()
        rows = "?" if table is None else f"{table.shape[0]:,}"
        return f"learned table of {rows} positions added to the token embeddings"
    return f"{kind} position vectors added to the token embeddings"


def summary(model: HFParts) -> ArchitectureSummary:
    """See ``LoadedModel.architecture``; one teacher-forced pass of the example probes the norms."""
    module = model.module
    config = module.config
    heads = int(_first(config, HEADS))
    d_ff = _first(config, FFN_WIDTHS) or 4 * config.hidden_size
    activation = str(_first(config, ACTIVATIONS) or "?").removeprefix("gated-")
    out, emb = module.get_output_embeddings(), module.get_input_embeddings()
    context = model.max_positions()
    example = model.spec.example or "the cat sat on the mat"
    return summarize(
        model,
        lambda: model.forced_logprobs(example, []),
        positions=positions_text(model),
        heads=heads,
        kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
        d_head=head_scale(config).d_k,
        d_ff=int(d_ff),
        activation=activation,
        tied=None if out is None else out.weight is emb.weight,
        context=None if context > NO_LIMIT else context,
    )


def rotary_tables(model: HFParts, positions: int) -> tuple[np.ndarray, np.ndarray] | None:
    """cos and sin ``[positions, d_head]`` from the model's own rotary module (the first module
    whose class name says ``Rotary``), as its attention layers receive them; None without one."""
    if model.spec.positions != "rotary":
        return None
    rotary = next((m for m in model.module.modules() if "Rotary" in type(m).__name__), None)
    if rotary is None:
        return None
    param = next(model.module.parameters())
    x = torch.zeros((1, positions, 1), dtype=param.dtype, device=param.device)  # dtype, device
    ids = torch.arange(positions, device=param.device)[None]  # (1, positions)
    with torch.no_grad():
        cos, sin = rotary(x, ids)  # (1, positions, d_head) each
    return cos[0].float().cpu().numpy(), sin[0].float().cpu().numpy()


def kv_groups(model: HFParts, kind: AttentionKind) -> tuple[int, ...]:
    """Per query head its K/V head (``LoadedModel.kv_groups``): with ``num_key_value_heads`` in
    the config (Llama, Mistral, Qwen...), query head ``h`` reads K/V head ``h // (heads /
    kv_heads)``, as transformers' ``repeat_kv`` lays them out; one each otherwise."""
    heads = model.attention_shape(kind)[1]
    kv_heads = getattr(model.module.config, "num_key_value_heads", None) or heads
    if kind == "cross" or heads % kv_heads:
        return tuple(range(heads))
    return tuple(h // (heads // kv_heads) for h in range(heads))
