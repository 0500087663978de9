"""Step-by-step decoding of Hugging Face models: encode once, then score each output prefix.

Encoder-decoder models run the decoder on ``decoder_start + outputs`` against the encoder output;
decoder-only models run ``prompt + outputs``. A prefix that extends one scored at the previous step
runs only its newest token against that prefix's key/value cache (``past_key_values``). Logits
follow the generation config's token rules, so greedy steps produce what ``generate`` produces.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from transformers import Cache, EncoderDecoderCache

from viz_transformer.models.hf.call_order import in_call_order
from viz_transformer.models.hf.generation import constrain, decoder_start
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.hf.spec import MAX_NEW_TOKENS, NOTES
from viz_transformer.models.hf.trace_pass import PassNotes, softmax_calls
from viz_transformer.models.prefix_states import PrefixStates
from viz_transformer.models.results import DecoderSession, StepScores
from viz_transformer.records.kinds import AttentionKind


def decoder_session(model: HFParts, text: str, use_cache: bool = True) -> DecoderSession:
    """Encode ``text`` once and score output prefixes step by step.

    Encoder-decoder: each step runs the decoder on ``decoder_start + outputs`` against the
    encoder output computed here. Decoder-only: each step runs ``prompt + outputs`` (the
    prompt is the start of the decoder input). With ``use_cache``, a prefix whose parent (the
    prefix without its last token) was scored at the previous step runs only its last token
    against a copy of the parent's ``past_key_values`` (the cross-attention keys and values,
    computed at the first step, are shared); other prefixes run whole. Logits pass the
    generation config's rules (``generation.constrain``), so greedy steps produce what ``generate``
    produces.

    Raises:
        ValueError: an encoder-only model, or input the model cannot take.
    """
    spec = model.spec
    if spec.encoder_only:
        raise ValueError(f"{NOTES['encoder-only']['decoder']} There is nothing to decode.")
    src_ids = model.encode_text(text)
    kinds = [k for k in ("decoder", "cross") if k in model.names]
    src = torch.tensor([src_ids], device=model.device)
    fixed: dict[str, Any] = {"use_cache": use_cache}
    if spec.encoder_decoder:
        with torch.no_grad():
            fixed["encoder_outputs"] = model.module.get_encoder()(
                input_ids=src, attention_mask=torch.ones_like(src)
            )
        fixed["attention_mask"] = torch.ones_like(src)
        start, key = [decoder_start(model.module)], "decoder_input_ids"
    else:
        start, key = src_ids, "input_ids"
    states: PrefixStates[Cache] = PrefixStates()

    def score(outputs: Sequence[int]) -> StepScores:
        parent = states.parent(outputs) if use_cache else None
        new = [*start, *outputs] if parent is None else [outputs[-1]]
        batch = {**fixed, key: torch.tensor([new], device=model.device)}  # (1, n)
        if parent is not None:
            batch["past_key_values"] = _fork(parent)
        if spec.decoder_only:  # the mask covers the cached positions too
            batch["attention_mask"] = torch.ones(
                1, len(start) + len(outputs), dtype=torch.long, device=model.device
            )
        logits, rows, past = _newest(model, kinds, batch)
        if use_cache:
            states.put(outputs, past)
        logits = constrain(model.module.generation_config, logits, len(outputs), len(start))
        return StepScores(
            F.log_softmax(logits, dim=-1).cpu().numpy(), rows.get("decoder"), rows.get("cross")
        )

    limit = model.max_positions()
    # outputs are labelled after the decoder's start as the trace labels them: a piece that
    # continues no word ("b" after "<pad>") is not marked "##" as it would be on its own
    return DecoderSession(
        src_tokens=model.token_labels(src_ids) if spec.encoder_decoder else (),
        start_tokens=model.token_labels(start),
        eos_ids=frozenset(model.eos_ids()),
        max_new=max(1, min(MAX_NEW_TOKENS, limit - len(start) + 1)),
        score=score,
        tokens=lambda ids: model.token_labels([*start, *ids], spec.decoder_only)[len(start) :],
        notes={} if spec.encoder_decoder else {"cross": NOTES["decoder-only"]["cross"]},
    )


def _fork(cache: Cache) -> Cache:
    """A copy of ``cache`` for the next pass to extend: transformers caches grow in place, and a
    beam may branch from the same prefix again. The cross-attention part of an encoder-decoder
    cache, fixed once the first step filled it, is shared rather than copied."""
    if isinstance(cache, EncoderDecoderCache):
        return EncoderDecoderCache(
            copy.deepcopy(cache.self_attention_cache), cache.cross_attention_cache
        )
    return copy.deepcopy(cache)


def _newest(
    model: HFParts, kinds: list[AttentionKind], batch: dict[str, Any]
) -> tuple[torch.Tensor, dict[AttentionKind, np.ndarray], Cache | None]:
    """One forward pass: the last position's logits ``(vocab,)``, per kind the newest query
    row of every call and head ``[calls, H, K]`` (in call order, as the trace's), and the
    ``past_key_values`` after the pass (None without ``use_cache``)."""
    flat = [n for k in kinds for n in model.names[k]]
    with torch.no_grad(), in_call_order(model.module, flat, _last_row) as seen:
        out = model.module(**batch)
    rows = {}
    for k in kinds:  # as the trace has them: in call order, linear attention left out
        bases = {n.removesuffix(".hook_pattern") for n in model.names[k]}
        mine = softmax_calls(k, [(b, r) for b, r in seen if b in bases], PassNotes())
        rows[k] = np.stack([r.cpu().float().numpy() for _, r in mine])
    return out.logits[0, -1].float(), rows, out.past_key_values


def _last_row(x: torch.Tensor) -> torch.Tensor:
    # (B, H, q, k) -> the newest query row (H, K), copied: a view would keep every layer's whole
    # pattern alive until the step ends (a 3,000-token prompt: 9.7 GB for smollm2)
    return x[0, :, -1].clone()
