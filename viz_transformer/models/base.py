"""What every model family provides: a spec the registry lists and a loaded handle that traces."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace

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
    curves: bool = False  # training curves with and without 1/sqrt(d_k) were recorded


@dataclass(frozen=True)
class HeadScale:
    """How a model scales its scores: the head width d_k and whether it divides by sqrt(d_k)."""

    d_k: int
    scaled: bool


@dataclass(frozen=True)
class InputEmbedding:
    """What a model adds at its input (section 3.4): scale * token embedding + position vector.

    Attributes:
        weight: the token-embedding matrix ``(vocab, d_model)`` on the model's device.
        scale: its multiplier: sqrt(d_model), a Hugging Face ``embed_scale``, or 1.
        positions: float32 ``[P, d_model]`` position vectors added to it, None when positions
            enter otherwise (rotary, relative biases).
        source: how the positions were made, for captions.
        note: a caption the positional page shows for this model, or None.
    """

    weight: torch.Tensor
    scale: float
    positions: np.ndarray | None
    source: str
    note: str | None = None


QKV_NOTE = (
    "The walkthrough needs the q, k and v hook points of our own implementations (the paper and "
    "Bergamot models); for this model, the Attention maps page shows its weights."
)


@dataclass(frozen=True)
class QKVRun:
    """One forward pass of our own network, read where the Q, K, V walkthrough of one attention
    kind looks (``networks.hooks.qkv_hook_names``).

    Attributes:
        cache: hook name -> float32 array, batch dimension removed.
        src_tokens: the source as shown; tgt_tokens: the decoder input as shown (start first).
        scaled: whether the scores were divided by sqrt(d_k).
    """

    cache: dict[str, np.ndarray]
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    scaled: bool


@dataclass(frozen=True)
class StepScores:
    """What the decoder computes for one output prefix: the next token and the newest rows.

    Attributes:
        logprobs: ``(vocab,)`` float32 log-softmax over the next token; ``-inf`` where the
            model's decoding rules forbid a token (a shortlist, banned ids).
        self_row: ``[layers, heads, T]`` masked self-attention of the newest decoder position over
            the ``T`` decoder inputs so far, or None (no decoder self-attention).
        cross_row: ``[layers, heads, S]`` that position's attention over the source, or None.
    """

    logprobs: np.ndarray
    self_row: np.ndarray | None
    cross_row: np.ndarray | None


@dataclass(frozen=True)
class DecoderSession:
    """A source encoded once (section 3.1), ready to score any output prefix, one step at a time.

    Attributes:
        src_tokens: source tokens as shown (empty for a decoder-only model).
        start_tokens: the decoder input before any output: ``<s>`` (the start symbol), or the
            prompt of a decoder-only model.
        eos_ids: ids that end the output.
        max_new: the most output tokens the model's own decoding produces (end symbol included).
        score: ``score(outputs)`` runs the decoder on the start then ``outputs`` ("shifted
            right") and returns the newest position's ``StepScores``.
        tokens: display strings of output ids.
        notes: attention kind -> why this decoder has no such row.
    """

    src_tokens: tuple[str, ...]
    start_tokens: tuple[str, ...]
    eos_ids: frozenset[int]
    max_new: int
    score: Callable[[Sequence[int]], StepScores] = field(repr=False)
    tokens: Callable[[Sequence[int]], tuple[str, ...]] = field(repr=False)
    notes: dict[str, str] = field(default_factory=dict)


def newest_rows(cache: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The last query row of each named pattern ``(heads, T, K)``, stacked ``[layers, heads, K]``.

    The newest decoder position is the only one a step adds; the earlier rows are unchanged
    because the causal mask hides every later position from them (section 3.2.3).
    """
    return np.stack([cache[n][:, -1] for n in names])


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

    def head_scale(self) -> HeadScale:
        """d_k and whether scores are divided by sqrt(d_k), read from the config (section 3.2.1)."""
        raise NotImplementedError

    def input_embedding(self) -> InputEmbedding:
        """The token embeddings, their scale and the position table added to them (section 3.4)."""
        raise NotImplementedError

    def source_ids(self, text: str) -> tuple[list[int], tuple[str, ...]]:
        """The source ids of ``text`` as the model reads them, and their display tokens.

        Raises:
            ValueError: text the model cannot read (unknown word, too long), with the fix.
        """
        raise NotImplementedError

    def hook_name(self, kind: AttentionKind, layer: int, point: str) -> str:
        """The hook-point name of ``point`` (``"hook_q"``, ``"hook_pattern"``, ...) in the
        attention sub-layer of ``kind`` at ``layer``: ``decoder.layers.1.cross_attn.hook_q``."""
        raise NotImplementedError

    def training_curves(self) -> dict[str, dict[str, list[float]]] | None:
        """Loss and gradient-norm curves of this model trained with (``"scaled"``) and without
        (``"unscaled"``) 1/sqrt(d_k), when they were recorded; None otherwise."""
        return None

    def qkv_run(self, text: str, kind: AttentionKind, target: str | None = None) -> QKVRun:
        """Run ``text`` once (greedy output, or ``target`` forced) reading every point the Q, K,
        V walkthrough of ``kind`` needs.

        Raises:
            ValueError: a model without our hook points (``QKV_NOTE``), a kind it lacks, or
                text it cannot read.
        """
        raise ValueError(QKV_NOTE)

    def decoder_session(self, text: str) -> DecoderSession:
        """Encode ``text`` once and return a session that scores output prefixes step by step.

        Raises:
            ValueError: the model has no decoder, or input it cannot take.
        """
        raise ValueError(f"{self.name} has no decoder: it produces no output to step through.")

    @abstractmethod
    def trace(self, text: str, target: str | None = None) -> Trace:
        """Attention of every layer and head for ``text`` (greedy output, or ``target`` forced).

        Raises:
            ValueError: input the model cannot take, with what to do instead.
        """


def row_argmax(logits: torch.Tensor) -> list[int]:
    """The most likely id at every row of ``logits`` ``(T, vocab)``; numpy's argmax on the CPU,
    which is ~5x faster than torch's there (the first maximum wins in both)."""
    logits = logits.detach()
    if logits.device.type == "cpu":
        return logits.float().numpy().argmax(-1).tolist()
    return logits.argmax(-1).tolist()


def default_device() -> torch.device:
    """``cuda`` when present, else ``mps``, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
