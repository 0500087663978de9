"""The models this machine offers, what each can show, and a thread-safe cache of loaded handles."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from safetensors.torch import load_file

from viz_transformer.config import TransformerConfig
from viz_transformer.models.paper import Transformer
from viz_transformer.vocab import WordVocab

AttentionKind = Literal["encoder", "decoder", "cross"]
WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "weights"
DEFAULT_MODEL = "paper-sov"


@dataclass(frozen=True)
class ModelSpec:
    """What the registry knows of a model before loading it."""

    name: str
    family: Literal["paper"]
    description: str
    example: str  # pre-filled sentence
    shows: tuple[AttentionKind, ...]  # attention kinds with a map
    positions: Literal["sinusoidal", "learned"]
    path: Path


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A model ready to trace: module in eval mode on ``device``, its tokenizer and metadata."""

    spec: ModelSpec
    module: Transformer
    vocab: WordVocab
    device: torch.device
    meta: dict[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        return self.spec.name


def default_device() -> torch.device:
    """``cuda`` when present, else ``mps``, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _paper_specs() -> dict[str, ModelSpec]:
    specs = {}
    for meta_path in sorted(WEIGHTS_DIR.glob("paper-*/meta.json")):
        meta = json.loads(meta_path.read_text())
        specs[meta["name"]] = ModelSpec(
            name=meta["name"],
            family="paper",
            description=meta["description"],
            example=meta["example"],
            shows=("encoder", "decoder", "cross"),
            positions="sinusoidal",
            path=meta_path.parent,
        )
    return specs


def available_models() -> list[str]:
    """Names of the models this machine can load, the default first."""
    names = sorted(_paper_specs())
    return sorted(names, key=lambda n: n != DEFAULT_MODEL)


def model_info(name: str) -> ModelSpec:
    specs = _paper_specs()
    if name not in specs:
        raise ValueError(
            f"unknown model {name!r}; available here: {', '.join(available_models())}."
        )
    return specs[name]


def _load_paper(spec: ModelSpec, device: torch.device) -> LoadedModel:
    meta = json.loads((spec.path / "meta.json").read_text())
    cfg = TransformerConfig.from_dict(meta["config"])
    module = Transformer(cfg)
    state = load_file(str(spec.path / "model.safetensors"))
    missing, unexpected = module.load_state_dict(state, strict=False)
    tied = {"tgt_embed.weight", "generator.weight"} if cfg.tie_embeddings else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(
            f"{spec.path / 'model.safetensors'} does not match its config: missing "
            f"{sorted(set(missing) - tied)}, unexpected {unexpected}; retrain with "
            f"`python -m viz_transformer.train --task {meta['task']}`."
        )
    module.to(device).eval()
    return LoadedModel(spec, module, WordVocab.load(spec.path / "vocab.json"), device, meta)


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
            _CACHE[key] = _load_paper(spec, dev)
        return _CACHE[key]
