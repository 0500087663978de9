"""The built-in paper models: loading from ``weights/``, greedy decoding, and their traces."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from viz_transformer.models.base import (
    DecoderSession,
    LoadedModel,
    ModelSpec,
    StepScores,
    newest_rows,
    row_argmax,
)
from viz_transformer.models.prefix_states import PrefixStates
from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.hooks import collect
from viz_transformer.networks.paper import DecoderCache, Transformer
from viz_transformer.records.trace import Trace, truncation_note
from viz_transformer.settings import WEIGHTS_DIR
from viz_transformer.text.spm import MODEL_FILE, SentencePieceVocab
from viz_transformer.text.vocab import WordVocab

# What a paper model reads text with: words (toy tasks) or SentencePiece pieces (real language).
# Both offer encode(text, add_eos), decode(ids), display tokens, index and bos/eos/pad ids.
Tokenizer = WordVocab | SentencePieceVocab


def pad_batch(seqs: list[list[int]], pad_id: int, device: torch.device | str) -> torch.Tensor:
    """Right-pad id lists into a ``(B, T)`` long tensor."""
    width = max(len(s) for s in seqs)
    return torch.tensor([s + [pad_id] * (width - len(s)) for s in seqs], device=device)


def source_mask(src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``(B, 1, 1, S)`` True where the source holds a real token, so no query attends to padding."""
    return (src != pad_id)[:, None, None, :]


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    src_mask: torch.Tensor | None,
    bos_id: int,
    eos_id: int,
    max_new: int,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy decoding: the encoder runs once; each step feeds ``<s>`` + the outputs so far.

    Args:
        model: the paper Transformer in eval mode.
        src: (B, S) source ids; src_mask: (B, 1, 1, S) or None.
        max_new: the most output tokens per sequence (``</s>`` included).
        use_cache: run only the newest token each step against the key/value cache
            (``Transformer.extend``); False decodes the whole prefix again (same ids, slower).

    Returns:
        For each sequence, the output ids without the start symbol, ending at ``</s>`` if produced.
    """
    memory = model.encode(src, src_mask)
    cache = model.start(memory)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_new):
        if use_cache:
            logits, cache = model.extend(cache, src_mask, ys[:, -1:])  # (B, 1, vocab)
        else:
            logits = model.decode(memory, src_mask, ys)  # (B, T, vocab)
        next_id = logits[:, -1].argmax(-1)  # (B,)
        next_id = torch.where(done, torch.full_like(next_id, eos_id), next_id)
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        done |= next_id == eos_id
        if bool(done.all()):
            break
    return [row[: row.index(eos_id) + 1] if eos_id in row else row for row in ys[:, 1:].tolist()]


def paper_specs() -> dict[str, ModelSpec]:
    """One spec per ``weights/paper-*/meta.json`` shipped in the package."""
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
        path = Path(spec.path)
        meta = json.loads((path / "meta.json").read_text())
        cfg = TransformerConfig.from_dict(meta["config"])
        module = Transformer(cfg)
        missing, unexpected = module.load_state_dict(
            load_file(str(path / "model.safetensors")), strict=False
        )
        tied = {"tgt_embed.weight", "generator.weight"} if cfg.tie_embeddings else set()
        if set(missing) - tied or unexpected:
            retrain = meta.get(
                "retrain", f"python -m viz_transformer.training.train --task {meta['task']}"
            )
            raise RuntimeError(
                f"{path / 'model.safetensors'} does not match its config (missing "
                f"{sorted(set(missing) - tied)}, unexpected {unexpected}); retrain it with "
                f"`{retrain}`."
            )
        sp_file = path / MODEL_FILE  # a SentencePiece model replaces vocab.json when present
        vocab: Tokenizer = (
            SentencePieceVocab.load(sp_file)
            if sp_file.is_file()
            else WordVocab.load(path / "vocab.json")
        )
        return cls(spec, device, module.to(device).eval(), vocab, meta)

    def position_table(self) -> np.ndarray:
        """The sinusoidal table the model adds, ``[max_len, d_model]`` (section 3.5)."""
        return self.module.pe.detach().to("cpu", torch.float32).numpy()

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
            src_tokens=tuple(vocab.tokens[i] for i in src_ids),
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

    def trace(self, text: str, target: str | None = None) -> Trace:
        vocab, module = self.vocab, self.module
        messages: list[str] = []
        src_ids = self._source_ids(text, messages)
        if target is None:
            src = torch.tensor([src_ids], device=self.device)
            max_new = module.cfg.max_len - 1
            out = greedy_decode(module, src, None, vocab.bos_id, vocab.eos_id, max_new)[0]
            out_ids = [i for i in out if i != vocab.eos_id]
        else:
            out_ids = vocab.encode(target, add_eos=False)
            if len(out_ids) >= module.cfg.max_len:  # the decoder input adds <s>
                messages.append("Target: " + truncation_note(len(out_ids) + 1, module.cfg.max_len))
                out_ids = out_ids[: module.cfg.max_len - 1]
        tgt_in = [vocab.bos_id, *out_ids]
        names = module.pattern_hook_names()
        flat = [n for layer_names in names.values() for n in layer_names]
        logits, cache = self.run_with_cache(src_ids, tgt_in, flat)
        arrays = {kind: np.stack([cache[n] for n in ns]) for kind, ns in names.items()}
        return Trace(
            model_name=self.name,
            src_tokens=tuple(vocab.tokens[i] for i in src_ids),
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
