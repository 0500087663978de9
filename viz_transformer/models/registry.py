"""The models this machine offers, what each can show, and a thread-safe cache of loaded handles.

Three families: the paper models shipped in this repository, the Bergamot EN<->PT translators and
MiniLM shipped in pip packages, and any Hugging Face model named ``hf:<hub id or local path>``.
Any folder in the shipped paper models' layout (a training run's checkpoint) loads as
``paper:<folder>``.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from viz_transformer.models.paper_spec import PREFIX as PAPER_PREFIX
from viz_transformer.models.paper_spec import folder_spec, paper_specs
from viz_transformer.models.spec import ModelSpec

if TYPE_CHECKING:  # PyTorch is imported by a load, never by a spec: a lesson reads specs only
    import torch

    from viz_transformer.models.base import LoadedModel

DEFAULT_MODEL = "paper-en-pt"  # the paper's Figure 1 on real language: all three attentions
FALLBACK_MODEL = "paper-sov"  # the default if its weights are missing


@functools.cache
def _installed_specs() -> dict[str, ModelSpec]:
    # imported here, and only if its packages import: transformers alone takes seconds, and a
    # missing package must not take the other families down with it
    try:
        specs = _hf_specs()
    except ImportError:
        specs = {}
    return {**specs, **_own_specs()}


@functools.cache
def _own_specs() -> dict[str, ModelSpec]:
    """The paper models and the Bergamot translators, found without importing transformers
    (seconds on a CPU): loading one of them never waits for the Hugging Face family."""
    try:
        specs = _bergamot_specs()
    except ImportError:
        specs = {}
    return {**specs, **paper_specs()}


def _bergamot_specs() -> dict[str, ModelSpec]:
    from viz_transformer.models.bergamot_spec import bergamot_specs

    return bergamot_specs()


def _hf_specs() -> dict[str, ModelSpec]:
    from viz_transformer.models.hf.spec import hf_specs

    return hf_specs()


def default_model() -> str:
    """The model the app opens with: ``paper-en-pt``, the paper's architecture translating
    English into Portuguese (its teacher, Bergamot EN->PT, is one click away)."""
    return DEFAULT_MODEL if DEFAULT_MODEL in _own_specs() else FALLBACK_MODEL


def needs_preparation(name: str) -> bool:
    """Whether ``load_model(name)`` first does one-time work (the built-in LLM's conversion,
    ``prepare_model``), which a page may offer behind a button instead."""
    from viz_transformer.models.hf import smollm2  # reads files only, never imports transformers

    return name == smollm2.NAME and not smollm2.is_converted()


def available_models() -> list[str]:
    """Names of the models this machine can load without a download, the default first.

    Any other Hugging Face model is reachable as ``hf:<hub id or local path>``.
    """
    first = default_model()
    return sorted(_installed_specs(), key=lambda n: (n != first, n)) + sorted(_MEMORY)


def model_info(name: str) -> ModelSpec:
    """The spec of ``name``: what it can show and how it is loaded.

    Raises:
        ValueError: an unknown name, an ``hf:`` name that is malformed or cannot be found, or a
            ``paper:<folder>`` that lacks a file (named).
    """
    if name in _MEMORY:
        return _MEMORY[name].spec
    if name.startswith(PAPER_PREFIX):
        return folder_spec(name)
    if name.startswith("hf:"):
        from viz_transformer.models.hf.spec import hf_spec

        return hf_spec(name)
    if name in _own_specs():
        return _own_specs()[name]
    specs = _installed_specs()
    if name not in specs:
        raise ValueError(
            f"unknown model {name!r}; available here: {', '.join(available_models())}, "
            "hf:<Hugging Face id or local folder> or paper:<folder of a paper model>."
        )
    return specs[name]


def _load(spec: ModelSpec, device: torch.device, dtype: torch.dtype) -> LoadedModel:
    import torch

    if spec.family == "hf":
        from viz_transformer.models.hf.model import HFModel

        return HFModel.load(spec, device, dtype=dtype)
    if dtype != torch.float32:  # a few MB each: nothing to gain, and their capture is float32
        raise ValueError(
            f"{spec.name} loads in float32 only; bfloat16 and float16 are for hf: models. "
            "Leave the dtype unset (or VT_DTYPE=float32) for it."
        )
    if spec.family == "paper":
        from viz_transformer.models.paper import PaperModel

        return PaperModel.load(spec, device)
    from viz_transformer.models.bergamot import BergamotModel

    return BergamotModel.load(spec, device)


_CACHE: dict[tuple[str, str, str], LoadedModel] = {}
_LOCK = threading.Lock()


def canonical_device(dev: torch.device) -> torch.device:
    """``cuda`` spelled with its index (``cuda:0``), so both spellings share one loaded model."""
    import torch

    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return dev


def load_model(
    name: str, device: str | torch.device | None = None, dtype: str | torch.dtype | None = None
) -> LoadedModel:
    """Load (once per name, device and dtype) and return a handle shared by every caller.

    Args:
        name: one of ``available_models()``, ``hf:<hub id or local path>`` or
            ``paper:<folder>`` (meta.json, model.safetensors and vocab.json or spm.model).
        device: ``"cpu"``, ``"cuda"``, ...; default ``default_device()`` (``VT_DEVICE``).
        dtype: what the weights are held and run in: ``"float32"`` (default, or ``VT_DTYPE``),
            ``"bfloat16"`` or ``"float16"`` for ``hf:`` models (half the memory of float32);
            attention maps are computed in float32 from the queries and keys either way.

    Raises:
        ValueError: an unknown model, a device this machine lacks (``check_device``), a dtype
            the model cannot load in, or a ``paper:<folder>`` with a missing file or weights
            that do not fit its config.
    """
    import torch

    from viz_transformer.models.devices import check_device, check_dtype, default_device

    if name in _MEMORY:  # trained live: it stays on the device it was trained on
        return _MEMORY[name]
    spec = model_info(name)
    dev = canonical_device(check_device(device) if device is not None else default_device())
    # VT_DTYPE is for the hf: models; the small built-in families stay float32 under it
    kind = check_dtype(dtype) if dtype is not None or spec.family == "hf" else torch.float32
    key = (spec.name, str(dev), str(kind))
    with _LOCK:
        if key not in _CACHE:
            try:
                _CACHE[key] = _load(spec, dev, kind)
            except ValueError:
                raise
            except Exception as exc:  # corrupt file, missing package: one message, app goes on
                raise RuntimeError(
                    f"{spec.name} cannot be loaded ({type(exc).__name__}: {exc}). Its files may be "
                    "damaged or a package missing: reinstall it; the other models still work."
                ) from exc
        return _CACHE[key]


def nearest_model(name: str, wanted: Callable[[ModelSpec], bool]) -> str | None:
    """The installed model closest to ``name`` among those whose spec satisfies ``wanted``.

    Closest means: reads the same language, then writes the same one, then real language
    before a task, then the order of ``available_models()``. None when no model qualifies.

    Example: ``nearest_model("bergamot-en-pt", lambda s: "decoder" in s.shows)`` is
    ``"paper-en-pt"``, the paper's architecture on the same English input.
    """
    here = model_info(name)
    order = available_models()
    found = [n for n in order if n != here.name and wanted(model_info(n))]

    def distance(other: str) -> tuple[bool, bool, bool, int]:
        spec = model_info(other)
        return (
            spec.source_lang != here.source_lang,
            spec.target_lang != here.target_lang,
            spec.task is not None,
            order.index(other),
        )

    return min(found, key=distance, default=None)


# Models that exist in memory only (live training, ``training.live``): offered by name until
# forgotten, so the app's pages accept them while they exist and memory stays bounded.
_MEMORY: dict[str, LoadedModel] = {}


def offer_memory_model(model: LoadedModel) -> None:
    """Offer ``model`` under ``model.name`` (``available_models``, ``load_model``)."""
    with _LOCK:
        _MEMORY[model.name] = model


def forget_memory_models(prefix: str) -> None:
    """Stop offering the in-memory models whose names start with ``prefix``."""
    with _LOCK:
        for name in [n for n in _MEMORY if n.startswith(prefix)]:
            del _MEMORY[name]
