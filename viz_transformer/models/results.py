"""What a loaded model hands to analysis besides a ``Trace``: head scales, input embeddings,
decoding sessions and partial layer runs, plus small helpers on logits (the Q/K/V walkthrough's
record is ``records.qkv.KindCapture``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch


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
    "The walkthrough reads our own paper and Bergamot models, BERT-family encoders (BERT, "
    "MiniLM: query, key, value, attention.output.dense, absolute positions), GPT-2 (ln_1, "
    "c_attn, c_proj) and Llama-family decoders (Llama, SmolLM2, Mistral, Qwen2: RMSNorm, q_proj, "
    "k_proj, v_proj, o_proj, rotary positions); for this model, the Attention maps page shows its "
    "weights."
)


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


@dataclass(frozen=True)
class LayerRuns:
    """A clean teacher-forced pass kept layer by layer (``LoadedModel.layer_runs``).

    Attributes:
        clean: ``(1, n)`` log-probabilities of the scored ids in the clean run.
        layers: layers of the attention kind asked for.
        run: ``run(firsts)`` reruns one batch, row b from layer ``firsts[b]`` on (ascending;
            the layers below keep the clean run's outputs), under the caller's hooks; returns
            ``(len(firsts), n)`` log-probabilities.
    """

    clean: torch.Tensor
    layers: int
    run: Callable[[Sequence[int]], torch.Tensor] = field(repr=False)


def newest_rows(cache: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The last query row of each named pattern ``(heads, T, K)``, stacked ``[layers, heads, K]``.

    The newest decoder position is the only one a step adds; the earlier rows are unchanged
    because the causal mask hides every later position from them (section 3.2.3).
    """
    return np.stack([cache[n][:, -1] for n in names])


def target_logprobs(logits: torch.Tensor, ids: Sequence[int]) -> torch.Tensor:
    """Log-probabilities ``(B, n)`` of ``ids`` (n) under the last n rows of ``logits``
    ``(B, T, vocab)``: each row scores the id that follows it."""
    rows = logits[:, logits.shape[1] - len(ids) :].float().log_softmax(-1)  # (B, n, vocab)
    index = torch.tensor(list(ids), dtype=torch.long, device=logits.device)  # (n,)
    return rows.gather(-1, index.expand(logits.shape[0], -1)[..., None])[..., 0]


def row_argmax(logits: torch.Tensor) -> list[int]:
    """The most likely id at every row of ``logits`` ``(T, vocab)``; numpy's argmax on the CPU,
    which is ~5x faster than torch's there (the first maximum wins in both)."""
    logits = logits.detach()
    if logits.device.type == "cpu":
        return logits.float().numpy().argmax(-1).tolist()
    return logits.argmax(-1).tolist()
