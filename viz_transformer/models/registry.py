"""The models this machine offers, what each can show, and a thread-safe cache of loaded handles."""

from __future__ import annotations

import threading

import torch

from viz_transformer.models.base import LoadedModel, ModelSpec, default_device
from viz_transformer.models.builtin import PaperModel, paper_specs

DEFAULT_MODEL = "paper-sov"


def _specs() -> dict[str, ModelSpec]:
    return paper_specs()


def available_models() -> list[str]:
    """Names of the models this machine can load, the default first."""
    return sorted(_specs(), key=lambda n: (n != DEFAULT_MODEL, n))


def model_info(name: str) -> ModelSpec:
    """The spec of ``name``: what it can show and how it is loaded."""
    specs = _specs()
    if name not in specs:
        raise ValueError(
            f"unknown model {name!r}; available here: {', '.join(available_models())}."
        )
    return specs[name]


_CACHE: dict[tuple[str, str], LoadedModel] = {}
_LOCK = threading.Lock()


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load (once per name and device) and return a handle shared by every caller.

    Args:
        name: one of ``available_models()``.
        device: ``"cpu"``, ``"cuda"``, ...; default ``default_device()``.
    """
    spec = model_info(name)
    dev = torch.device(device) if device is not None else default_device()
    key = (name, str(dev))
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = PaperModel.load(spec, dev)
        return _CACHE[key]
