"""What a Hugging Face model adds at its input and how it scales its scores, read from its config
and modules, for ``HFModel.head_scale``, ``input_embedding``, ``position_table`` and
``hook_name``."""

from __future__ import annotations

import numpy as np
import torch
from transformers import PretrainedConfig, PreTrainedModel

from viz_transformer.models.hf.spec import POSITION_TABLES
from viz_transformer.models.results import HeadScale, InputEmbedding
from viz_transformer.networks.hooks import known_hook, point_name
from viz_transformer.records.kinds import KIND_SHORT, AttentionKind


def head_scale(config: PretrainedConfig) -> HeadScale:
    """d_k and whether scores are divided by sqrt(d_k) (section 3.2.1).

    ``head_dim`` when present, T5's ``d_kv`` (T5 does not scale at all), else hidden_size /
    num_attention_heads; GPT-2's ``scale_attn_weights`` is honoured.
    """
    if getattr(config, "d_kv", None) and "relative_attention_num_buckets" in config.to_dict():
        return HeadScale(int(config.d_kv), False)  # T5 family: scores are never divided
    d_k = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return HeadScale(int(d_k), bool(getattr(config, "scale_attn_weights", True)))


def position_table(module: PreTrainedModel, positions: str) -> np.ndarray | None:
    """Learned position embeddings of the (encoder) input, ``[positions, d_model]``; None when
    ``positions`` (the spec's) are not ``learned``.

    BERT and MiniLM keep them at ``embeddings.position_embeddings``, GPT-2 at ``wpe``, BART
    at ``embed_positions`` (whose first two rows are an offset, kept as stored).
    """
    if positions != "learned":
        return None
    for path, mod in module.named_modules():
        last = path.rsplit(".", 1)[-1]
        if isinstance(mod, torch.nn.Embedding) and last in POSITION_TABLES:
            return mod.weight.detach().to("cpu", torch.float32).numpy()
    return None


def input_embedding(
    module: PreTrainedModel, positions: str, table: np.ndarray | None
) -> InputEmbedding:
    """The input embeddings, their scale (BART/Marian ``embed_scale``, else 1) and the position
    table added to them.

    Args:
        module: the loaded model.
        positions: ``ModelSpec.positions``.
        table: the learned table (``HFModel.position_table``) or None; a Marian-like model's
            sinusoid is then read from its ``embed_positions`` module.
    """
    emb = module.get_input_embeddings()
    scale = getattr(emb, "embed_scale", None)
    if scale is None:
        scale = next((m.embed_scale for m in module.modules() if hasattr(m, "embed_scale")), 1.0)
    if table is None and positions == "sinusoidal":  # Marian keeps its sinusoid in a module
        found = [m for n, m in module.named_modules() if n.endswith("embed_positions")]
        table = found[0].weight.detach().to("cpu", torch.float32).numpy() if found else None
    return InputEmbedding(emb.weight, float(scale or 1.0), table, f"{positions} positions")


def hook_name(
    module: PreTrainedModel,
    names: dict[AttentionKind, list[str]],
    kind: AttentionKind,
    layer: int,
    point: str,
) -> str:
    """``point`` of the attention module of ``kind`` at ``layer``, beside its ``hook_pattern``
    (``hook_q`` and ``hook_k`` exist where the ``"vt"`` attention function runs).

    Args:
        module: the loaded model; names: ``HFModel.names``, kind -> pattern names by layer.

    Raises:
        ValueError: a kind, layer or point the model does not have.
    """
    if kind not in names:
        shown = ", ".join(KIND_SHORT[k] for k in names)
        raise ValueError(f"this model has no {KIND_SHORT[kind]} attention; it has {shown}.")
    layers = names[kind]
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer {layer} does not exist: choose 0 to {len(layers) - 1}.")
    return known_hook(module, point_name(layers[layer].removesuffix(".hook_pattern"), point))
