"""What every model family provides: a spec the registry lists and a loaded handle that traces."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from viz_transformer.record import AttentionKind, Trace

Family = Literal["paper", "bergamot", "hf"]


@dataclass(frozen=True)
class ModelSpec:
    """What the registry knows of a model before loading it."""

    name: str
    family: Family
    description: str
    example: str  # pre-filled sentence
    shows: tuple[AttentionKind, ...]  # attention kinds with a map
    positions: Literal["sinusoidal", "learned", "relative", "rotary"]
    path: Path | str  # weights folder, or a Hugging Face id


class LoadedModel(ABC):
    """A model ready to trace, shared by every session (so it holds no per-call state)."""

    spec: ModelSpec
    device: torch.device

    @property
    def name(self) -> str:
        return self.spec.name

    def position_table(self) -> np.ndarray | None:
        """The position vectors added to the source embeddings, float32 ``[positions, d_model]``,
        or None when positions enter otherwise (relative biases, rotary) or are not exposed."""
        return None

    @abstractmethod
    def trace(self, text: str, target: str | None = None) -> Trace:
        """Attention of every layer and head for ``text`` (greedy output, or ``target`` forced).

        Raises:
            ValueError: input the model cannot take, with what to do instead.
        """


def default_device() -> torch.device:
    """``cuda`` when present, else ``mps``, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
