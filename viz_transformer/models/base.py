"""What every model family provides: a loaded handle that traces (``LoadedModel``).

Its spec is in ``models.spec``, what its methods return in ``models.results``, devices in
``models.devices``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager

import numpy as np
import torch

from viz_transformer.models.results import (
    QKV_NOTE,
    DecoderSession,
    HeadScale,
    InputEmbedding,
    LayerRuns,
)
from viz_transformer.models.spec import ModelFacts, ModelSpec
from viz_transformer.networks.greedy import StepCallback, on_step
from viz_transformer.networks.hooks import HookFn, collect, hooks
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.batch import PatternBatch
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs
from viz_transformer.records.trace import Trace
from viz_transformer.text.language import guess_language


class LoadedModel(ABC):
    """A model ready to trace, shared by every session (so it holds no per-call state)."""

    spec: ModelSpec
    device: torch.device
    module: torch.nn.Module  # the network whose hook points ``vt.hooks`` reaches

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def dtype(self) -> torch.dtype:
        """What the weights are held and run in (``load_model(..., dtype=)``); maps are float32
        whatever it is."""
        return next(self.module.parameters()).dtype

    @property
    def facts(self) -> ModelFacts:
        """What this model is: its attention kinds (``facts.kinds``), the architecture they
        name, the layers and heads of each kind (``facts.shape(kind)``) and its example
        inputs."""
        spec, kinds = self.spec, self.spec.kinds
        shapes = {kind: self.attention_shape(kind) for kind in kinds}
        return ModelFacts(
            name=self.name,
            kinds=kinds,
            layers={kind: layers for kind, (layers, _) in shapes.items()},
            heads={kind: heads for kind, (_, heads) in shapes.items()},
            example=spec.example,
            patch_pair=spec.patch_pair,
        )

    def hooked(self, fns: Mapping[str, HookFn | list[HookFn]]) -> AbstractContextManager[None]:
        """Run the model with these hook functions, in this thread only, while the context is
        open (``vt.hooks(model.module, fns)``): how analysis reads or changes a run."""
        return hooks(self.module, fns)

    def recording(self, names: list[str]) -> AbstractContextManager[dict[str, np.ndarray]]:
        """Keep the named hook points' values of the runs inside the context: name -> float32
        numpy, batch dimension removed (``networks.hooks.collect``)."""
        return collect(self.module, names)

    def stepping(self, callback: StepCallback) -> AbstractContextManager[None]:
        """Call ``callback(steps_done, max_new)`` after each step of greedy decoding inside the
        context, in this thread only (``networks.greedy.on_step``; any model's decoding in this
        thread reports to it): progress of a long decode, and where an exception from the
        callback stops it between two tokens."""
        return on_step(callback)

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

    def training_note(self) -> str | None:
        """What the two runs of ``training_curves`` share and how they differ, when recorded."""
        return None

    def qkv_run(
        self, text: str, kind: AttentionKind, target: str | None = None, needs: Needs | None = None
    ) -> KindCapture:
        """Run ``text`` once (greedy output, or ``target`` forced) reading every point the Q, K,
        V walkthrough of ``kind`` needs; ``needs`` may leave points and layers out (a Hugging
        Face model then runs no eager attention where no pattern is asked).

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

    def held_unembed(
        self, parts: torch.Tensor, stream: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Direct logit attribution: ``unembed`` made linear by holding the final norm's scale.

        Args:
            parts: ``(n, d_model)`` vectors that add up (with others) to the residual stream.
            stream: ``(d_model,)`` the stream the final norm read in the run, whose scale is held.

        Returns:
            ``(n, vocab)`` each part's logits, and ``(vocab,)`` what the biases (the norm's, the
            output layer's) add: when the parts sum to ``stream``, their rows plus the bias equal
            ``unembed(stream)``. This default serves a model whose ``unembed`` is affine (no
            final norm: post-norm networks); a model with a final norm overrides it.
        """
        with torch.no_grad():
            bias = self.unembed(torch.zeros_like(stream))
            return self.unembed(parts) - bias, bias

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

    def greedy_ids(self, src_ids: list[int], max_new: int = 64) -> list[int]:
        """Greedy output ids of one encoded input (a decoder-only model: the continuation of
        ``src_ids``), cut before the end id, at most ``max_new``; each step reports through
        ``stepping``."""
        raise ValueError(f"{self.name} gives no greedy ids of encoded input; pick another model.")

    def decode(self, ids: Sequence[int]) -> str:
        """The text of output ids, special tokens skipped."""
        raise ValueError(f"{self.name} does not decode ids to text; pick another model.")

    def token_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """The ids of ``text`` (special tokens included) and each one's ``(start, end)``
        characters in it (``(0, 0)`` for a special token).

        Raises:
            ValueError: a model whose tokenizer gives no offsets.
        """
        raise ValueError(f"{self.name}'s tokenizer gives no character offsets.")

    def greedy_outputs(self, texts: Sequence[str]) -> list[str]:
        """The greedy output text of each input (what ``trace(text).output_text`` records).

        This generic path traces one input after the other; a family with a batched greedy
        decoder decodes them together.
        """
        return [self.trace(text).output_text for text in texts]

    def batch_patterns(self, texts: Sequence[str]) -> PatternBatch:
        """The attention of several inputs (greedy outputs), each equal to its own ``trace``.

        This generic path traces one input after the other; a family with a batched path runs
        them together, padding masked, grouped by the caller by length.

        Raises:
            ValueError: an input the model cannot take.
        """
        return PatternBatch.from_traces([self.trace(text) for text in texts])

    @abstractmethod
    def trace(self, text: str, target: str | None = None) -> Trace:
        """Attention of every layer and head for ``text`` (greedy output, or ``target`` forced).

        Raises:
            ValueError: input the model cannot take, with what to do instead.
        """
