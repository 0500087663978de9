"""Step-by-step decoding of Hugging Face models: encode once, then score each output prefix.

Encoder-decoder models run the decoder on ``decoder_start + outputs`` against the encoder output;
decoder-only models run ``prompt + outputs``. Logits follow the generation config's token rules,
so greedy steps produce what ``generate`` produces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from viz_transformer.hooks import collect_calls
from viz_transformer.models.base import DecoderSession, StepScores
from viz_transformer.models.hf import MAX_NEW_TOKENS, NOTES
from viz_transformer.record import AttentionKind

if TYPE_CHECKING:
    from viz_transformer.models.hf import HFModel


def decoder_session(model: HFModel, text: str) -> DecoderSession:
    """Encode ``text`` once and score output prefixes step by step.

    Encoder-decoder: each step runs the decoder on ``decoder_start + outputs`` against the
    encoder output computed here. Decoder-only: each step runs ``prompt + outputs`` (the
    prompt is the start of the decoder input). Logits pass the generation config's rules
    (``_constrain``), so greedy steps produce what ``generate`` produces.

    Raises:
        ValueError: an encoder-only model, or input the model cannot take.
    """
    arch = model.spec.shows[-1]
    if arch == "encoder":
        raise ValueError(f"{NOTES['encoder']['decoder']} There is nothing to decode.")
    src_ids = model.encode_text(text)
    kinds = [k for k in ("decoder", "cross") if k in model.names]
    src = torch.tensor([src_ids], device=model.device)
    fixed: dict[str, Any] = {"use_cache": False}
    if arch == "cross":
        with torch.no_grad():
            fixed["encoder_outputs"] = model.module.get_encoder()(
                input_ids=src, attention_mask=torch.ones_like(src)
            )
        fixed["attention_mask"] = torch.ones_like(src)
        start, key = [_decoder_start(model)], "decoder_input_ids"
    else:
        start, key = src_ids, "input_ids"

    def score(outputs: Sequence[int]) -> StepScores:
        ids = torch.tensor([[*start, *outputs]], device=model.device)  # (1, T)
        batch = {**fixed, key: ids}
        if arch == "decoder":
            batch["attention_mask"] = torch.ones_like(ids)
        logits, rows = _newest(model, kinds, batch)
        logits = _constrain(model, logits, len(outputs), first=arch == "cross")
        return StepScores(
            F.log_softmax(logits, dim=-1).cpu().numpy(), rows.get("decoder"), rows.get("cross")
        )

    limit = model.max_positions()
    return DecoderSession(
        src_tokens=model.token_labels(src_ids) if arch == "cross" else (),
        start_tokens=model.token_labels(start),
        eos_ids=frozenset(model._eos_ids() - {None}),
        max_new=max(1, min(MAX_NEW_TOKENS, limit - len(start) + 1)),
        score=score,
        tokens=lambda ids: model.token_labels(list(ids)),
        notes={} if arch == "cross" else {"cross": NOTES["decoder"]["cross"]},
    )


def _newest(
    model: HFModel, kinds: list[AttentionKind], batch: dict[str, Any]
) -> tuple[torch.Tensor, dict[AttentionKind, np.ndarray]]:
    """One forward pass: the last position's logits ``(vocab,)`` and, per kind, the newest
    query row of every layer and head ``[L, H, K]`` (every call kept, in order)."""
    flat = [n for k in kinds for n in model.names[k]]
    with torch.no_grad(), collect_calls(model.module, flat, _last_row) as calls:
        out = model.module(**batch)
    rows = {k: np.stack([a for n in model.names[k] for a in calls[n]]) for k in kinds}
    return out.logits[0, -1].float(), rows


def _last_row(x: torch.Tensor) -> torch.Tensor:
    return x[0, :, -1]  # (B, H, q, k) -> the newest query row (H, K)


def _constrain(model: HFModel, logits: torch.Tensor, n_out: int, first: bool) -> torch.Tensor:
    """Apply the generation config's token rules to next-token ``logits`` ``(vocab,)``:
    banned and suppressed ids, a forced first token (``first``: encoder-decoder models) and
    the forced end at the length limit, as ``generate`` does."""
    config = model.module.generation_config
    banned = [ids[0] for ids in config.bad_words_ids or [] if len(ids) == 1]
    banned += list(config.suppress_tokens or [])
    if first and n_out == 0:
        banned += list(config.begin_suppress_tokens or [])
    out = logits.clone()
    out[banned] = float("-inf")
    forced = config.forced_eos_token_id if n_out == MAX_NEW_TOKENS - 1 else None
    if first and n_out == 0:
        forced = config.forced_bos_token_id
    if forced is not None:
        out = torch.full_like(out, float("-inf"))
        out[forced] = 0.0
    return out


def _decoder_start(model: HFModel) -> int:
    start = model.module.config.decoder_start_token_id
    if start is None:
        start = model.module.generation_config.decoder_start_token_id
    return int(start)
