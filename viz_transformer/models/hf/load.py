"""Loading a Hugging Face model for capture: the Auto class of its architecture, float32, and an
attention implementation that returns weights (ours, ``hf_attention``, or eager)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
    PretrainedConfig,
    PreTrainedModel,
)

from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf.names import offline_first
from viz_transformer.models.spec import ModelSpec

AUTO = {  # keyed by ModelSpec.architecture
    "encoder-only": AutoModel,
    "decoder-only": AutoModelForCausalLM,
    "encoder-decoder": AutoModelForSeq2SeqLM,
}


def attention_implementation(spec: ModelSpec, config: PretrainedConfig) -> str:
    """``"vt"`` (see ``hf_attention``) when the model's code calls attention functions by name,
    else ``"eager"`` (sdpa and flash return no weights)."""
    try:
        cls = AUTO[spec.architecture]._model_mapping[type(config)]
    except (KeyError, ValueError):
        return "eager"
    cls = cls[0] if isinstance(cls, tuple) else cls  # Funnel: the model and its base variant
    # the modeling file must call attention through ALL_ATTENTION_FUNCTIONS to reach ours
    if not hasattr(sys.modules.get(cls.__module__), "ALL_ATTENTION_FUNCTIONS"):
        return "eager"
    return hf_attention.register()


def load_module(
    spec: ModelSpec,
    config: PretrainedConfig,
    device_map: str | None,
    dtype: torch.dtype = torch.float32,
) -> PreTrainedModel:
    """The model through the Auto class of its architecture in ``dtype``, attention through
    ``hf_attention`` (or eager for a model that takes no attention function). BigBird's
    block-sparse attention returns no weights: it runs with full attention (what it does itself
    below a few blocks of tokens), whose maps are exact."""
    ident = str(spec.path)
    if getattr(config, "attention_type", None) == "block_sparse":  # BigBird: no weights
        config.attention_type = "original_full"
    kwargs: dict[str, Any] = {
        "config": config,
        "attn_implementation": attention_implementation(spec, config),
        "trust_remote_code": False,
        # below float32 the maps come from q and k in float32 (a bf16 softmax row sums to 1
        # only within ~2e-3)
        "dtype": dtype,
    }
    if device_map is not None:
        kwargs["device_map"] = device_map
    if Path(ident).is_absolute() and any(Path(ident).glob("*.safetensors")):
        kwargs["use_safetensors"] = True
    auto = AUTO[spec.architecture]
    return offline_first(
        ident, lambda local: auto.from_pretrained(ident, local_files_only=local, **kwargs)
    )
