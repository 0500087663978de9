"""viz-transformer: see inside the Transformer of "Attention Is All You Need".

Public API::

    import viz_transformer as vt
    vt.available_models()
    m = vt.load_model("paper-reverse")
    tr = vt.trace(m, "happy king red ship", target=None)
"""

from viz_transformer.capture import Trace, run_with_cache, trace
from viz_transformer.models.registry import (
    DEFAULT_MODEL,
    available_models,
    default_device,
    load_model,
    model_info,
)

__all__ = [
    "DEFAULT_MODEL",
    "Trace",
    "available_models",
    "default_device",
    "load_model",
    "model_info",
    "run_with_cache",
    "trace",
]
