"""Greedy generation of Hugging Face models through ``networks.greedy``: ``greedy_ids``, the one
greedy decoder of this family (encoder-decoder sources batched; a decoder-only model's
continuation with its key/value cache, ``HFModel.greedy_ids``).

The generation config's token rules (``constrain``) apply at every step, as ``generate`` applies
them, so the step-by-step decoder (``hf.steps``) and the trace's greedy output agree by
construction, and a batch of sources gives what each source alone gives.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

import torch
from transformers import Cache, GenerationConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from viz_transformer.models.hf.spec import MAX_NEW_TOKENS
from viz_transformer.networks.greedy import greedy_loop
from viz_transformer.networks.paper_decode import pad_batch


def constrain(
    config: GenerationConfig, logits: torch.Tensor, n_out: int, prefix: int
) -> torch.Tensor:
    """Apply the generation config's token rules to next-token ``logits`` ``(..., vocab)`` as
    ``generate``'s logits processors do: banned and suppressed ids at every step; the forced
    first token where the decoder input is one id long (an encoder-decoder's start); ids
    suppressed at the first free step (after a forced first token, if any); the forced end at
    the length limit.

    Args:
        n_out: ids produced so far; prefix: ids of the decoder input before them (1, the start
            id, for an encoder-decoder; the prompt's length for a decoder-only model).
    """
    length = prefix + n_out  # the decoder input's length at this step (generate's cur_len)
    banned = [ids[0] for ids in config.bad_words_ids or [] if len(ids) == 1]
    banned += list(config.suppress_tokens or [])
    begin = prefix if prefix > 1 or config.forced_bos_token_id is None else prefix + 1
    if length == begin:
        banned += list(config.begin_suppress_tokens or [])
    out = logits.clone()
    out[..., banned] = float("-inf")
    forced = config.forced_eos_token_id if n_out == MAX_NEW_TOKENS - 1 else None
    if length == 1 and config.forced_bos_token_id is not None:
        forced = config.forced_bos_token_id
    if forced is not None:
        out = torch.full_like(out, float("-inf"))
        out[..., forced] = 0.0
    return out


def decoder_start(module: PreTrainedModel) -> int:
    """The id an encoder-decoder model's decoder input starts with."""
    start = module.config.decoder_start_token_id
    if start is None:
        start = module.generation_config.decoder_start_token_id
    return int(start)


@dataclass(frozen=True)
class _Rows:
    """What the greedy steps carry for the rows still decoding, all cut to the same rows."""

    memory: torch.Tensor  # (B', S, d) encoder output
    mask: torch.Tensor  # (B', S) 1 = real source token
    cache: Cache | None  # past_key_values after the previous step
    n_out: int  # ids produced so far (the same for every row still decoding)

    def select(self, rows: torch.Tensor) -> _Rows:
        if self.cache is not None:
            self.cache.reorder_cache(rows)  # in place: this state is the only owner
        return replace(self, memory=self.memory[rows], mask=self.mask[rows])


@torch.no_grad()
def greedy_ids(
    module: PreTrainedModel,
    sources: list[list[int]],
    eos_ids: Collection[int],
    max_new: int = MAX_NEW_TOKENS,
) -> list[list[int]]:
    """Greedy outputs for source id lists of any lengths.

    An encoder-decoder's sources are right-padded and masked, encoded once, and decoded
    together; a row leaves the batch when it ends (``greedy_loop``), so each output is that
    source's alone. A decoder-only model continues each source in turn (``_continue``).

    Args:
        module: the model in eval mode.
        sources: token ids per source, special tokens included (``HFModel.encode_text``).
        eos_ids: the ids that end an output.
        max_new: the most ids per output.

    Returns:
        Per source, the output ids (an encoder-decoder's after the decoder start), cut before
        the first end id, at most ``max_new``.
    """
    if not module.config.is_encoder_decoder:
        return [_continue(module, ids, eos_ids, max_new) for ids in sources]
    device = module.device
    src = pad_batch(sources, 0, device)  # (B, S); the padding id is masked out
    lengths = torch.tensor([len(s) for s in sources], device=device)
    mask = (torch.arange(src.shape[1], device=device)[None] < lengths[:, None]).long()  # (B, S)
    memory = module.get_encoder()(input_ids=src, attention_mask=mask).last_hidden_state
    start = decoder_start(module)
    config = module.generation_config

    def step(prev: torch.Tensor | None, rows: _Rows) -> tuple[torch.Tensor, _Rows]:
        ids = (
            torch.full((rows.mask.shape[0], 1), start, device=device)
            if prev is None
            else prev[:, None]
        )
        out = module(
            encoder_outputs=BaseModelOutput(last_hidden_state=rows.memory),
            attention_mask=rows.mask,
            decoder_input_ids=ids,
            past_key_values=rows.cache,
            use_cache=True,
        )
        logits = constrain(config, out.logits[:, -1].float(), rows.n_out, 1)  # (B', V)
        return logits, replace(rows, cache=out.past_key_values, n_out=rows.n_out + 1)

    rows = _Rows(memory, mask, None, 0)
    outs = greedy_loop(step, _Rows.select, rows, len(sources), eos_ids, max_new, device)
    return [out[:-1] if out and out[-1] in eos_ids else out for out in outs]


def _continue(
    module: PreTrainedModel, ids: list[int], eos_ids: Collection[int], max_new: int
) -> list[int]:
    """A decoder-only model's greedy continuation of ``ids`` with its key/value cache (logits of
    the last position only: a long prompt never makes a ``[T, vocab]`` array), the generation
    config's token rules at every step, cut before an end id."""
    device, config = module.device, module.generation_config

    def step(prev: torch.Tensor | None, state: tuple) -> tuple[torch.Tensor, tuple]:
        past, n_out = state
        x = torch.tensor([ids], device=device) if prev is None else prev[:, None]
        out = module(input_ids=x, past_key_values=past, use_cache=True, logits_to_keep=1)
        logits = constrain(config, out.logits[:, -1].float(), n_out, len(ids))  # (1, V)
        return logits, (out.past_key_values, n_out + 1)

    (out,) = greedy_loop(step, lambda state, _: state, (None, 0), 1, eos_ids, max_new, device)
    return out[:-1] if out and out[-1] in eos_ids else out
