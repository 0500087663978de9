"""viz-transformer: see inside the Transformer of "Attention Is All You Need".

Public API::

    import viz_transformer as vt
    vt.available_models()
    m = vt.load_model("paper-reverse")
    tr = vt.trace(m, "happy king red ship", target=None)
"""

from viz_transformer.models.base import LoadedModel, ModelSpec, default_device
from viz_transformer.models.capture import trace
from viz_transformer.models.registry import (
    DEFAULT_MODEL,
    available_models,
    default_model,
    load_model,
    model_info,
)
from viz_transformer.records.trace import Trace

__all__ = [
    "DEFAULT_MODEL",
    "LoadedModel",
    "ModelSpec",
    "Trace",
    "available_models",
    "default_device",
    "default_model",
    "load_model",
    "model_info",
    "trace",
]
