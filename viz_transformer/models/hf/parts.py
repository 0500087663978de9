"""What the ``hf/`` helper modules read of a loaded Hugging Face model (``HFParts``).

``HFModel`` (``hf.model``) imports the helpers, so they cannot import it back; they take this
protocol instead, which ``HFModel`` satisfies, and use only its public members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from transformers import PreTrainedModel

from viz_transformer.models.results import HeadScale
from viz_transformer.models.spec import ModelSpec
from viz_transformer.records.kinds import AttentionKind


class HFParts(Protocol):
    """A loaded Hugging Face model as the helpers see it (``HFModel`` implements every member).

    Attributes:
        spec: the model's spec; device: where it runs; module: the model in eval mode.
        names: attention kind -> the pattern hook names of its layers, in call order.
        lazy_capable: whether long inputs keep queries and keys (``LazyPatterns``).
    """

    spec: ModelSpec
    device: torch.device
    module: PreTrainedModel
    names: dict[AttentionKind, list[str]]
    lazy_capable: bool

    @property
    def name(self) -> str: ...

    def encode_text(self, text: str, messages: list[str] | None = None) -> list[int]:
        """Token ids of ``text``, special tokens included, cut to ``max_positions()``."""
        ...

    def target_ids(self, target: str) -> list[int]:
        """Token ids of a forced output (an encoder-decoder's target, or a decoder-only
        model's continuation without special tokens)."""
        ...

    def token_labels(self, ids: list[int], text_start: bool = True) -> tuple[str, ...]: ...

    def max_positions(self) -> int: ...

    def eos_ids(self) -> set[int]: ...

    def greedy_ids(self, src_ids: list[int], max_new: int = ...) -> list[int]: ...

    def attention_shape(self, kind: AttentionKind) -> tuple[int, int]: ...

    def head_scale(self) -> HeadScale: ...

    def position_table(self) -> np.ndarray | None: ...

    def rotary_tables(self, positions: int) -> tuple[np.ndarray, np.ndarray] | None: ...

    def forced_logprobs(
        self, text: str, out_ids: Sequence[int], batch: int = 1
    ) -> torch.Tensor: ...
