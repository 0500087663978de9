"""Any Hugging Face encoder, decoder or encoder-decoder model, loaded offline first and traced
through permanent forward hooks on its attention modules.

The hooks call ``networks.hooks.dispatch`` and do nothing unless a ``hooks()`` block is active
in the calling thread, so one cached model serves every Streamlit session.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from viz_transformer.models.base import LoadedModel
from viz_transformer.models.devices import default_device, dtype_name
from viz_transformer.models.hf import architecture as hf_architecture
from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf import calls as hf_calls
from viz_transformer.models.hf import generation as hf_generation
from viz_transformer.models.hf import heads as hf_heads
from viz_transformer.models.hf import inputs as hf_inputs
from viz_transformer.models.hf import labels as hf_labels
from viz_transformer.models.hf import partial as hf_partial
from viz_transformer.models.hf import qkv as hf_qkv
from viz_transformer.models.hf import smollm2, trace_pass
from viz_transformer.models.hf.load import load_module
from viz_transformer.models.hf.names import (
    T5_TYPES,
    check_hf_id,
    offline_first,
    read_config,
)
from viz_transformer.models.hf.pattern_hooks import install_pattern_hooks
from viz_transformer.models.hf.spec import MAX_NEW_TOKENS, NOTES
from viz_transformer.models.hf.steps import decoder_session
from viz_transformer.models.results import (
    HeadScale,
    InputEmbedding,
)
from viz_transformer.models.spec import ModelSpec
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace, truncation_note
from viz_transformer.text.after import labels_after


@dataclass(eq=False)
class HFModel(LoadedModel):
    """A Hugging Face model in eval mode, its tokenizer, and its hook names per attention kind."""

    spec: ModelSpec
    device: torch.device
    module: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    names: dict[AttentionKind, list[str]]
    lazy_capable: bool = False  # long inputs keep queries and keys (``LazyPatterns``)
    # Fast tokenizers are Rust objects that raise "Already borrowed" when threads overlap.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    # The operations whose code lives in a role module of ``models/hf/``: each function takes
    # the model first, so it is bound here as the method itself (one definition, no wrapper)
    decoder_session = decoder_session
    architecture = hf_architecture.summary
    kv_groups = hf_architecture.kv_groups
    rotary_tables = hf_architecture.rotary_tables
    qkv_run = hf_qkv.qkv_run
    layer_runs = hf_partial.layer_runs
    attention_shape = hf_heads.attention_shape
    reference_ids = hf_heads.reference_ids
    forced_logprobs = hf_heads.forced_logprobs
    head_output_weight = hf_heads.output_weight
    lens_points = hf_heads.lens_points
    unembed = hf_heads.unembed
    held_unembed = hf_heads.held_unembed

    @classmethod
    def load(
        cls,
        spec: ModelSpec,
        device: torch.device | str | None = None,
        device_map: str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> HFModel:
        """Load tokenizer and model, offline first, with an attention that returns weights.

        Args:
            spec: from ``hf_spec`` or ``hf_specs``.
            device: where to run; ``default_device()`` when None. Ignored with ``device_map``.
            device_map: ``"auto"`` spreads a large model over the GPUs and the CPU (needs the
                ``accelerate`` package); used only when the caller asks for it.
            dtype: the weights' dtype. Below float32 the maps come from the queries and keys
                (``LazyPatterns``, softmax in float32), so a model whose attention is not plain
                softmax of the call's formula (one that computes attention in its own code)
                loads in float32 only.

        Raises:
            ValueError: one message naming the model and why it cannot be loaded.
        """
        if spec.name == smollm2.NAME:  # the built-in LLM: its GGUF converted once, checked
            spec = replace(spec, path=smollm2.ensure())
        ident = check_hf_id(str(spec.path))
        config = read_config(ident)
        tokenizer = offline_first(
            ident,
            lambda local: AutoTokenizer.from_pretrained(
                ident, local_files_only=local, trust_remote_code=False
            ),
        )
        module = load_module(spec, config, device_map, dtype).eval()
        if device_map is None:
            module = module.to(torch.device(device) if device else default_device())
        names = install_pattern_hooks(module, spec.shows)
        hf_heads.install_stream_hooks(module, names)  # the logit lens's residual stream
        lazy = module.config._attn_implementation == hf_attention.IMPLEMENTATION
        hf_calls.mark_unfused(module)
        if dtype != torch.float32 and not lazy:  # its own softmax in bf16: rows off by ~2e-3
            raise ValueError(
                f"{spec.name} computes attention in its own code (not through transformers' "
                f"attention functions), so its maps would be {dtype_name(dtype)} too: load it "
                "in float32 (no dtype)."
            )
        return cls(spec, module.device, module, tokenizer, names, lazy)

    def trace(self, text: str, target: str | None = None) -> Trace:
        """Attention of every layer and head: see ``_trace_single`` and ``_trace_seq2seq``.

        A decoder-only model reads a forced ``target`` as the continuation of ``text``.

        Raises:
            ValueError: empty or too long input, or a target for an encoder-only model.
        """
        spec = self.spec
        if spec.encoder_decoder:
            return self._trace_seq2seq(text, target)
        if spec.encoder_only and target and target.strip():
            raise ValueError(
                f"{self.name} is an encoder only: it produces no output to force. "
                "Leave the target empty."
            )
        if spec.encoder_only or target is None:
            return self._trace_single(text, None)
        sep = "" if text[-1:].isspace() or target[:1].isspace() else " "
        return self._trace_single(f"{text}{sep}{target}", target)

    def _trace_single(self, text: str, target: str | None) -> Trace:
        """Encoder-only: ``encoder`` ``[L, H, S, S]``. Decoder-only: ``decoder`` ``[L, H, T, T]``
        (causal) with the most likely next token at every position."""
        messages: list[str] = []
        ids = self.encode_text(text, messages)
        spec = self.spec
        preds, arrays, capture = trace_pass.run_single(self, ids)
        tokens = self.token_labels(ids)
        labels, output = (), ""
        if not spec.encoder_only:
            labels = labels_after(self._outputs, ids, preds or [])
            output = target if target is not None else self.decode(preds[-1:])
        return Trace(
            model_name=self.name,
            src_tokens=tokens if spec.encoder_only else (),
            tgt_tokens=tokens if spec.decoder_only else (),
            pred_tokens=labels,
            encoder=arrays.get("encoder"),
            decoder=arrays.get("decoder"),
            cross=None,
            output_text=output,
            forced=target is not None,
            scaled=self.module.config.model_type not in T5_TYPES,
            notes=NOTES[spec.architecture],
            messages=(*messages, *capture.messages),
            sink_layers=capture.sink_layers,
        ).validate()

    def _trace_seq2seq(self, text: str, target: str | None) -> Trace:
        """Greedy output (or ``target`` forced), then one teacher-forced pass over
        ``decoder_start + output``: encoder ``[L, H, S, S]``, decoder ``[L, H, T, T]``,
        cross ``[L, H, T, S]``; the last row predicts ``</s>``."""
        messages: list[str] = []
        src_ids = self.encode_text(text, messages)
        out_ids = self.greedy_ids(src_ids) if target is None else self.target_ids(target)
        eos_ids = self.eos_ids()
        while out_ids and out_ids[-1] in eos_ids:
            out_ids = out_ids[:-1]
        tgt_in = [hf_generation.decoder_start(self.module), *out_ids]
        self._check_length(len(tgt_in))
        preds, arrays, capture = trace_pass.run(
            self, input_ids=src_ids, attention_mask=[1] * len(src_ids), decoder_input_ids=tgt_in
        )
        return Trace(
            model_name=self.name,
            src_tokens=self.token_labels(src_ids),
            tgt_tokens=self.token_labels(tgt_in, text_start=False),
            pred_tokens=labels_after(self._outputs, tgt_in, preds or []),
            encoder=arrays["encoder"],
            decoder=arrays["decoder"],
            cross=arrays["cross"],
            output_text=target if target is not None else self.decode(out_ids),
            forced=target is not None,
            scaled=self.module.config.model_type not in T5_TYPES,
            messages=(*messages, *capture.messages),
            sink_layers=capture.sink_layers,
        ).validate()

    def greedy_outputs(self, texts: Sequence[str]) -> list[str]:
        """An encoder-decoder decodes them together (``hf.generation.greedy_ids``: padding
        masked, finished rows dropped); other models trace one after the other."""
        if not self.spec.encoder_decoder:
            return super().greedy_outputs(texts)
        sources = [self.encode_text(text) for text in texts]
        return [
            self.decode(ids)
            for ids in hf_generation.greedy_ids(self.module, sources, self.eos_ids())
        ]

    def target_ids(self, target: str) -> list[int]:
        """Token ids of a forced output: an encoder-decoder's target (its special tokens
        included), a decoder-only model's continuation (without)."""
        with self._lock:
            if self.spec.encoder_decoder:
                return self.tokenizer(text_target=target)["input_ids"]
            return self.tokenizer(target, add_special_tokens=False)["input_ids"]

    def greedy_ids(self, src_ids: list[int], max_new: int = MAX_NEW_TOKENS) -> list[int]:
        """Greedy output ids of one encoded source with the model's own generation rules
        (``hf.generation.greedy_ids``, the one greedy decoder of this family): an encoder-decoder's
        after the decoder start token, a decoder-only model's continuation of ``src_ids``; cut
        before the first end id, at most ``max_new``."""
        return hf_generation.greedy_ids(self.module, [src_ids], self.eos_ids(), max_new)[0]

    def chat_prompt(self, text: str) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            return super().chat_prompt(text)
        with self._lock:
            return self.tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
            )

    def head_scale(self) -> HeadScale:
        return hf_inputs.head_scale(self.module.config)

    def input_embedding(self) -> InputEmbedding:
        return hf_inputs.input_embedding(self.module, self.spec.positions, self.position_table())

    def source_ids(self, text: str) -> tuple[list[int], tuple[str, ...]]:
        ids = self.encode_text(text)
        return ids, self.token_labels(ids)

    def hook_name(self, kind: AttentionKind, layer: int, point: str) -> str:
        return hf_inputs.hook_name(self.module, self.names, kind, layer, point)

    def output_tokens(self, ids: Sequence[int]) -> tuple[str, ...]:
        return self._outputs(ids)

    def _outputs(self, ids: Sequence[int]) -> tuple[str, ...]:
        """Labels of ids that are no text's start (outputs, predictions)."""
        return self.token_labels(list(ids), text_start=False)

    def position_table(self) -> np.ndarray | None:
        return hf_inputs.position_table(self.module, self.spec.positions)

    def encode_text(self, text: str, messages: list[str] | None = None) -> list[int]:
        """Token ids of ``text``, special tokens included, cut to ``max_positions()`` (the
        tokenizer keeps the closing special tokens); ``messages`` receives a note if cut.

        Raises:
            ValueError: no token in the text.
        """
        limit = self.max_positions()
        with self._lock:
            ids = self.tokenizer(text)["input_ids"]
            if len(ids) > limit:
                if messages is not None:
                    messages.append(truncation_note(len(ids), limit))
                ids = self.tokenizer(text, truncation=True, max_length=limit)["input_ids"]
        if not ids:
            raise ValueError(f"{self.name} read no token in this text; type a sentence.")
        return ids

    def max_positions(self) -> int:
        """The longest input the tokenizer and the positions (a learned or sinusoidal table,
        or the context length rotary positions were trained for) accept."""
        limits = [self.tokenizer.model_max_length]
        if self.spec.positions in ("learned", "sinusoidal", "rotary"):
            limits.append(getattr(self.module.config, "max_position_embeddings", None) or limits[0])
        return int(min(limits))

    def _check_length(self, n: int) -> None:
        """Refuse inputs longer than ``max_positions()``."""
        if n > (limit := self.max_positions()):
            raise ValueError(
                f"{self.name} takes at most {limit} tokens and this input has {n}; shorten it."
            )

    def eos_ids(self) -> set[int]:
        """The ids that end an output: the generation config's, else the tokenizer's."""
        eos = self.module.generation_config.eos_token_id
        eos = self.tokenizer.eos_token_id if eos is None else eos
        return {e for e in (eos if isinstance(eos, list) else [eos]) if e is not None}

    def token_labels(self, ids: list[int], text_start: bool = True) -> tuple[str, ...]:
        """Display strings of ``ids`` (``Ġ``/``▁`` stripped, ``##`` before a piece continuing a
        word, special tokens kept); ``text_start``: ``ids`` begin a text (its first word has no
        mark before it), not outputs or predictions."""
        with self._lock:
            return hf_labels.token_labels(self.tokenizer, ids, text_start)

    def decode(self, ids: Sequence[int]) -> str:
        with self._lock:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def token_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        with self._lock:
            return hf_labels.token_offsets(self.tokenizer, self.name, text)
