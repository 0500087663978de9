"""What every model family provides: a spec the registry lists and a loaded handle that traces."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from viz_transformer import settings
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.kinds import ARCHITECTURES, KIND_SHORT, AttentionKind
from viz_transformer.records.trace import Trace
from viz_transformer.text.language import guess_language

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
    "The walkthrough reads our own paper and Bergamot models and Llama-family decoders (Llama, "
    "SmolLM2, Mistral, Qwen2: RMSNorm, q_proj, k_proj, v_proj, o_proj, rotary positions); for "
    "this model, the Attention maps page shows its weights."
)


@dataclass(frozen=True)
class QKVRun:
    """One forward pass of our own network, read where the Q, K, V walkthrough of one attention
    kind looks (``networks.hooks.qkv_hook_names``).

    Attributes:
        cache: hook name -> float32 array, batch dimension removed.
        src_tokens: the source as shown; tgt_tokens: the decoder input as shown (start first).
        scaled: whether the scores were divided by sqrt(d_k).
        weights: for a model read without our hook points (a Hugging Face Llama), its
            projections ``w_q`` ``[L, d, h * d_head]``, ``w_k``/``w_v`` ``[L, d, kv_heads *
            d_head]``, ``w_o`` ``[L, h * d_head, d]``, biases ``b_*`` (zeros where it has none),
            and ``norm`` ``[L, d]`` the pre-attention RMSNorm's gain; the cache then holds
            ``resid`` and ``x`` ``[L, T, d]`` (each block's input, and it RMS-normalised by the
            model) and ``pattern`` ``[L, h, T, T]``. None for our own networks.
        rotary: cos, sin ``[T, d_head]`` rotating q and k (RoPE), or None.
        n_heads, kv_heads: query and key/value heads (with ``weights``); norm_eps: the RMSNorm's
            epsilon.
    """

    cache: dict[str, np.ndarray]
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    scaled: bool
    weights: dict[str, np.ndarray] | None = None
    rotary: tuple[np.ndarray, np.ndarray] | None = None
    n_heads: int = 0
    kv_heads: int = 0
    norm_eps: float = 0.0


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


class LoadedModel(ABC):
    """A model ready to trace, shared by every session (so it holds no per-call state)."""

    spec: ModelSpec
    device: torch.device
    module: torch.nn.Module  # the network whose hook points ``vt.hooks`` reaches

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

    def accepts(self, text: str) -> bool:
        """Whether ``text`` suits this model: it reads every word (``source_ids`` raises nothing)
        and a cheap language guess does not contradict the language it was trained on."""
        try:
            self.source_ids(text)
        except (ValueError, NotImplementedError):
            return False
        guess = guess_language(text)
        return self.spec.source_lang is None or guess in (None, self.spec.source_lang)

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

    # What head ablation, importance, patching and the logit lens ask (``analysis/heads*``).

    def attention_shape(self, kind: AttentionKind) -> tuple[int, int]:
        """(layers, heads) of the attention of ``kind``.

        Raises:
            ValueError: the model has no such attention; the message names the kinds it has.
        """
        raise NotImplementedError

    def kv_groups(self, kind: AttentionKind) -> tuple[int, ...]:
        """Per query head of ``kind``, the key/value head it reads: grouped-query attention
        shares one K/V head among ``heads / kv_heads`` consecutive query heads; plain multi-head
        attention gives each query head its own (``(0, 1, ..., heads - 1)``, the default)."""
        return tuple(range(self.attention_shape(kind)[1]))

    def reference_ids(self, text: str, target: str | None = None) -> list[int]:
        """The output ids a trace of ``text`` records, end symbol excluded: the greedy output
        under whatever hooks are active (so an ablation can change it), or ``target``'s ids.
        Empty for a model with no output (an encoder only)."""
        return []

    def forced_logprobs(self, text: str, out_ids: Sequence[int], batch: int = 1) -> torch.Tensor:
        """One teacher-forced pass of ``batch`` copies of ``text`` with the decoder input
        start + ``out_ids`` (the trace's layout), under the caller's hooks.

        Returns:
            ``(batch, len(out_ids) + 1)`` log-probabilities of ``out_ids`` then the end symbol
            (a decoder-only model: of ``out_ids`` after the prompt, ``(batch, len(out_ids))``);
            ``(batch, 0)`` for an encoder only, whose pass still runs.
        """
        raise ValueError(f"{self.name} cannot score an output here; pick another model.")

    def layer_runs(
        self, text: str, out_ids: Sequence[int], kind: AttentionKind
    ) -> LayerRuns | None:
        """The clean ``forced_logprobs`` pass kept so that runs changed only from some layer of
        ``kind`` on can skip the layers below; None (the default) where the model has no such
        path, and callers run whole passes."""
        return None

    def head_output_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        """W^O of the attention of ``kind`` at ``layer`` split per head, ``(h, d_k, d_model)``:
        head i adds ``z_i @ W[i]`` to the residual stream (section 3.2.2)."""
        raise ValueError(f"{self.name} does not expose W^O per head; pick another model.")

    def lens_points(self) -> list[str]:
        """Hook names of the last stack's residual stream after each layer, in layer order."""
        raise ValueError(f"{self.name} has no output layer for the logit lens.")

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(..., vocab)`` of residual-stream vectors ``x`` ``(..., d_model)``: the final
        norm (when the model has one) and the output layer, every id allowed."""
        raise ValueError(f"{self.name} has no output layer for the logit lens.")

    def output_tokens(self, ids: Sequence[int]) -> tuple[str, ...]:
        """Display strings of output ids."""
        raise NotImplementedError

    def chat_prompt(self, text: str) -> str:
        """``text`` as a user message in the model's chat template, ending where the assistant's
        reply starts (what an instruction-tuned model was trained to continue).

        Raises:
            ValueError: the model has no chat template.
        """
        raise ValueError(f"{self.name} has no chat template: turn chat off to continue the text.")

    def rotary_tables(self, positions: int) -> tuple[np.ndarray, np.ndarray] | None:
        """cos and sin, float32 ``[positions, d_head]``, that the model's own rotary module
        applies to q and k at positions 0..positions-1 (half-split pairs: dim i with
        i + d_head/2); None for a model without rotary positions."""
        return None

    def architecture(self) -> ArchitectureSummary:
        """What this model is built of (``records.architecture``), read from its modules and
        config; runs one short forward pass (the example) to see where its norms sit."""
        raise ValueError(f"{self.name} does not describe its architecture; pick another model.")

    @abstractmethod
    def trace(self, text: str, target: str | None = None) -> Trace:
        """Attention of every layer and head for ``text`` (greedy output, or ``target`` forced).

        Raises:
            ValueError: input the model cannot take, with what to do instead.
        """


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


def default_device() -> torch.device:
    """``VT_DEVICE`` when set (checked by ``check_device``), else ``cuda`` when present, else
    ``mps``, else ``cpu``.

    Raises:
        ValueError: ``VT_DEVICE`` names a device this machine lacks, saying what to use instead.
    """
    if settings.DEVICE is not None:
        return check_device(settings.DEVICE, f"VT_DEVICE={settings.DEVICE}")
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def check_device(device: str | torch.device, what: str | None = None) -> torch.device:
    """``device`` as a ``torch.device``, once this machine is known to have it.

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``.
        what: how the caller names the setting in messages (``"VT_DEVICE=cuda"``,
            ``"--device cuda"``); default ``device 'cuda'``.

    Raises:
        ValueError: an unknown device name, a device type models cannot run on (``meta``), or a
            device torch cannot see here; the message says what to use instead.
    """
    what = what or f"device {str(device)!r}"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"{what} is not a device name: use cpu, cuda, cuda:N or mps.") from None
    if dev.type == "cpu":
        return dev
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"{what} but torch sees no CUDA device: unset it or use cpu.")
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"{what} but torch sees {count} CUDA device(s), cuda:0 to cuda:{count - 1}: "
                "use one of those or cpu."
            )
        return dev
    if dev.type == "mps":
        if not _mps_available():
            raise ValueError(f"{what} but torch sees no Apple GPU (mps): unset it or use cpu.")
        return dev
    raise ValueError(f"{what}: models run on cpu, cuda, cuda:N or mps, not {dev.type}.")
