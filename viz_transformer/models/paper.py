"""The built-in paper models: loading from ``weights/``, decoding sessions, and their traces."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from viz_transformer.models import own_heads, own_qkv
from viz_transformer.models.architecture import summarize
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.paper_batch import capture_batch
from viz_transformer.models.paper_folder import Tokenizer, load_folder
from viz_transformer.models.prefix_states import PrefixStates
from viz_transformer.models.results import (
    DecoderSession,
    HeadScale,
    InputEmbedding,
    StepScores,
    newest_rows,
    row_argmax,
    target_logprobs,
)
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.hooks import (
    attention_hook_name,
    collect,
    known_hook,
    qkv_hook_names,
)
from viz_transformer.networks.paper import DecoderCache, Transformer
from viz_transformer.networks.paper_decode import greedy_batch, greedy_decode
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.batch import PatternBatch
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs
from viz_transformer.records.trace import Trace, truncation_note


@dataclass(eq=False)
class PaperModel(LoadedModel):
    """A paper Transformer in eval mode with its vocabulary and training record."""

    spec: ModelSpec
    device: torch.device
    module: Transformer
    vocab: Tokenizer
    meta: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, spec: ModelSpec, device: torch.device) -> PaperModel:
        """Read ``spec.path``, a paper-model folder (``models.paper_folder``).

        Raises:
            ValueError: a missing file or weights that do not fit the config (named).
        """
        module, vocab, meta = load_folder(Path(spec.path))
        return cls(spec, device, module.to(device), vocab, meta)

    def position_table(self) -> np.ndarray:
        """The sinusoidal table the model adds, ``[max_len, d_model]`` (section 3.5)."""
        return self.module.pe.detach().to("cpu", torch.float32).numpy()

    def head_scale(self) -> HeadScale:
        """``cfg.d_k``, and ``cfg.scale_scores`` (off in the models trained without the scale)."""
        return HeadScale(self.module.cfg.d_k, self.module.cfg.scale_scores)

    def input_embedding(self) -> InputEmbedding:
        """The source embedding times sqrt(d_model) plus the paper's sinusoid (section 3.4)."""
        weight, d_model = self.module.src_embed.weight, self.module.cfg.d_model
        table = self.position_table()
        return InputEmbedding(
            weight, math.sqrt(d_model), table, "the paper's sinusoid (interleaved)"
        )

    def source_ids(self, text: str) -> tuple[list[int], tuple[str, ...]]:
        ids = self._source_ids(text)
        return ids, self.vocab.source_tokens(text, ids)

    def hook_name(self, kind: AttentionKind, layer: int, point: str) -> str:
        return known_hook(self.module, attention_hook_name(kind, layer, point))

    def attention_shape(self, kind: AttentionKind) -> tuple[int, int]:
        return own_heads.attention_shape(self.module, self.spec.shows, kind)

    def architecture(self) -> ArchitectureSummary:
        """The paper's choices, read from the config and modules (a ReLU FFN, Eq. 2)."""
        cfg, net = self.module.cfg, self.module
        positions = (
            f"sinusoid ({cfg.pe_layout} sin/cos) added to the token embeddings x sqrt(d_model), "
            f"table of {net.pe.shape[0]} positions; q and k are not rotated"
        )
        return summarize(
            self,
            lambda: self.trace(self.spec.example),
            positions=positions,
            heads=cfg.n_heads,
            kv_heads=cfg.n_heads,
            d_head=cfg.d_k,
            d_ff=cfg.d_ff,
            activation="relu",
            tied=net.generator.weight is net.tgt_embed.weight,
            context=net.pe.shape[0],
        )

    def reference_ids(self, text: str, target: str | None = None) -> list[int]:
        return self._output_ids(self._source_ids(text), target)

    def forced_logprobs(self, text: str, out_ids: Sequence[int], batch: int = 1) -> torch.Tensor:
        src = torch.tensor([self._source_ids(text)] * batch, device=self.device)  # (B, S)
        tgt = torch.tensor([[self.vocab.bos_id, *out_ids]] * batch, device=self.device)
        with torch.no_grad():
            logits = self.module(src, tgt)  # (B, T, vocab)
        return target_logprobs(logits, [*out_ids, self.vocab.eos_id])

    def head_output_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        return own_heads.output_weight(self.module, kind, layer)

    def lens_points(self) -> list[str]:
        return own_heads.decoder_stream_names(self.module)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        return self.module.generator(x)  # post-norm: the stream is already normalised

    def output_tokens(self, ids: Sequence[int]) -> tuple[str, ...]:
        return tuple(self.vocab.tokens[i] for i in ids)

    def training_curves(self) -> dict[str, dict[str, list[float]]] | None:
        """The ``"curves"`` of ``meta.json`` when both runs (scaled, unscaled) were recorded."""
        curves = self.meta.get("curves", {})
        return curves if {"scaled", "unscaled"} <= set(curves) else None

    def training_note(self) -> str | None:
        """``meta.json``'s ``"curves_note"``, written with the run without the scale."""
        return self.meta.get("curves_note")

    def run_with_cache(
        self, src_ids: list[int], tgt_in: list[int], names: list[str]
    ) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
        """One teacher-forced pass reading the named hook points.

        Args:
            src_ids: source ids (``</s>`` included); tgt_in: decoder input (``<s>`` first).
            names: hook-point names, e.g. ``"encoder.layers.0.self_attn.hook_q"``.

        Returns:
            logits ``(T, vocab)`` and name -> float32 array with the batch dimension removed.
        """
        src = torch.tensor([src_ids], device=self.device)
        tgt = torch.tensor([tgt_in], device=self.device)
        with torch.no_grad(), collect(self.module, names) as cache:
            logits = self.module(src, tgt)
        return logits[0], cache

    def qkv_run(
        self, text: str, kind: AttentionKind, target: str | None = None, needs: Needs | None = None
    ) -> KindCapture:
        """One teacher-forced pass over ``<s>`` + the output the trace records (or ``target``),
        read at every point the walkthrough of ``kind`` needs (``needs`` is not narrowed: these
        networks are small)."""
        src_ids = self._source_ids(text)
        out_ids = [] if target is None and kind == "encoder" else self._output_ids(src_ids, target)
        tgt_in = [self.vocab.bos_id, *out_ids]
        _, cache = self.run_with_cache(src_ids, tgt_in, qkv_hook_names(self.module, kind))
        tokens = (
            self.vocab.source_tokens(text, src_ids),
            tuple(self.vocab.tokens[i] for i in tgt_in),
        )
        scaled = self.module.cfg.scale_scores
        return own_qkv.kind_capture(self.name, self.module, kind, cache, tokens, scaled)

    def decoder_session(self, text: str, use_cache: bool = True) -> DecoderSession:
        """The source encoded once; each ``score(outputs)`` decodes ``<s>`` + ``outputs``.

        With ``use_cache``, a prefix that extends one scored at the previous step runs only its
        newest token against that prefix's key/value cache (``Transformer.extend``); any other
        prefix is decoded whole from the source's cache. Without it, every step decodes the
        whole prefix again. Either way a step's rows equal the teacher-forced trace's rows.
        """
        vocab, module = self.vocab, self.module
        src_ids = self._source_ids(text)
        names = module.pattern_hook_names()
        rows = names["decoder"] + names["cross"]
        with torch.no_grad():
            memory = module.encode(torch.tensor([src_ids], device=self.device))  # (1, S, d)
            empty = module.start(memory)
        states: PrefixStates[DecoderCache] = PrefixStates()

        def score(outputs: Sequence[int]) -> StepScores:
            parent = states.parent(outputs) if use_cache else None
            new = [vocab.bos_id, *outputs] if parent is None else [outputs[-1]]
            tgt = torch.tensor([new], device=self.device)  # (1, n)
            with torch.no_grad(), collect(module, rows) as cache:
                if use_cache:
                    logits, state = module.extend(empty if parent is None else parent, None, tgt)
                    states.put(outputs, state)
                else:
                    logits = module.decode(memory, None, tgt)
            return StepScores(
                logprobs=F.log_softmax(logits[0, -1].float(), dim=-1).cpu().numpy(),
                self_row=newest_rows(cache, names["decoder"]),
                cross_row=newest_rows(cache, names["cross"]),
            )

        return DecoderSession(
            src_tokens=vocab.source_tokens(text, src_ids),
            start_tokens=(vocab.tokens[vocab.bos_id],),
            eos_ids=frozenset({vocab.eos_id}),
            max_new=module.cfg.max_len - 1,
            score=score,
            tokens=lambda ids: tuple(vocab.tokens[i] for i in ids),
        )

    def _source_ids(self, text: str, messages: list[str] | None = None) -> list[int]:
        """Source ids ending in ``</s>``, cut to the model's positions (``messages`` says so)."""
        try:
            ids = self.vocab.encode(text)
        except ValueError as exc:  # say what this model's input looks like
            raise ValueError(f"{exc} A sentence it can read: “{self.spec.example}”.") from None
        limit = self.module.cfg.max_len
        if len(ids) > limit:
            if messages is not None:
                messages.append(truncation_note(len(ids), limit))
            ids = [*ids[: limit - 1], self.vocab.eos_id]
        return ids

    def _output_ids(
        self, src_ids: list[int], target: str | None, messages: list[str] | None = None
    ) -> list[int]:
        """The greedy output without ``</s>``, or ``target``'s ids cut to fit after ``<s>``."""
        vocab, module = self.vocab, self.module
        limit = module.cfg.max_len
        if target is None:
            with torch.no_grad():
                memory = module.encode(torch.tensor([src_ids], device=self.device))  # (1, S, d)
            (out,) = greedy_decode(
                module, memory, limit - 1, bos_id=vocab.bos_id, eos_id=vocab.eos_id
            )
            return [i for i in out if i != vocab.eos_id]
        out_ids = vocab.encode(target, add_eos=False)
        if len(out_ids) >= limit:  # the decoder input adds <s>
            if messages is not None:
                messages.append("Target: " + truncation_note(len(out_ids) + 1, limit))
            out_ids = out_ids[: limit - 1]
        return out_ids

    def greedy_outputs(self, texts: Sequence[str]) -> list[str]:
        """Decoded together (``greedy_batch``: padding masked, finished rows dropped)."""
        v = self.vocab
        sources = [self._source_ids(t) for t in texts]
        with torch.no_grad():
            outs = greedy_batch(
                self.module,
                sources,
                self.module.cfg.max_len - 1,
                pad_id=v.pad_id,
                bos_id=v.bos_id,
                eos_id=v.eos_id,
            )
        return [v.decode([i for i in out if i != v.eos_id]) for out in outs]

    def batch_patterns(self, texts: Sequence[str]) -> PatternBatch:
        """One padded batch: encoded once, decoded greedily together, read in one pass."""
        v = self.vocab
        src_ids = [self._source_ids(t) for t in texts]
        return capture_batch(
            self.module, src_ids, bos_id=v.bos_id, eos_id=v.eos_id, pad_id=v.pad_id
        )

    def trace(self, text: str, target: str | None = None) -> Trace:
        vocab, module = self.vocab, self.module
        messages: list[str] = []
        src_ids = self._source_ids(text, messages)
        out_ids = self._output_ids(src_ids, target, messages)
        tgt_in = [vocab.bos_id, *out_ids]
        names = module.pattern_hook_names()
        flat = [n for layer_names in names.values() for n in layer_names]
        logits, cache = self.run_with_cache(src_ids, tgt_in, flat)
        arrays = {kind: np.stack([cache[n] for n in ns]) for kind, ns in names.items()}
        return Trace(
            model_name=self.name,
            src_tokens=vocab.source_tokens(text, src_ids),
            tgt_tokens=tuple(vocab.tokens[i] for i in tgt_in),
            pred_tokens=tuple(vocab.tokens[i] for i in row_argmax(logits)),
            encoder=arrays["encoder"],
            decoder=arrays["decoder"],
            cross=arrays["cross"],
            output_text=vocab.decode(out_ids),
            forced=target is not None,
            scaled=module.cfg.scale_scores,
            messages=tuple(messages),
        )
