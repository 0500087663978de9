"""What the registry lists of a model before loading it: its ``ModelSpec``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from viz_transformer.records.kinds import ARCHITECTURES, KIND_SHORT, AttentionKind

Family = Literal["paper", "bergamot", "hf"]
LANGUAGES = {"en": "English", "pt": "Portuguese"}  # names of the ISO codes specs use


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
    curves: bool = False  # training curves with and without 1/sqrt(d_k) were recorded
    source_lang: str | None = None  # ISO code of the language it reads ("en"), None: a task/any
    target_lang: str | None = None  # ISO code of the language it writes, None: a task/none/any
    task: str | None = None  # a built-in task's name ("reverse") instead of real language
    teacher: str | None = None  # the model it was distilled from (the sidebar links to it)

    @property
    def architecture(self) -> str:
        """``encoder-only``, ``decoder-only`` or ``encoder-decoder`` (named by its last kind)."""
        return ARCHITECTURES[self.shows[-1]]

    @property
    def data(self) -> str:
        """What it reads: ``"task: reverse"``, ``"English -> Portuguese"``, ``"English"``."""
        if self.task is not None:
            return f"task: {self.task}"
        names = [LANGUAGES.get(c, c) for c in (self.source_lang, self.target_lang) if c]
        return " -> ".join(names) if names else "any text"

    def summary(self) -> str:
        """One line a model picker shows: architecture, the attention kinds with a map, the
        positions and the data, e.g. ``"encoder-decoder: encoder self, cross attention;
        sinusoidal positions; English -> Portuguese"``."""
        shows = ", ".join(KIND_SHORT[k] for k in self.shows)
        return f"{self.architecture}: {shows}; {self.positions} positions; {self.data}"
