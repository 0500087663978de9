"""Decoding the Bergamot/Marian network: greedy decoding and Marian's beam search.

``greedy_decode(model, memory, max_new, *, ...)`` has the shape of ``paper_decode``'s; this
network needs no start id (its first decoder input is a zero vector), reads ``</s>`` from its
config, and takes an optional lexical shortlist. Its source is never padded.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from viz_transformer.networks.greedy import greedy_loop
from viz_transformer.networks.marian import BergamotTransformer, DecoderState


@dataclass(frozen=True)
class Hypothesis:
    """One finished beam: output ids (``</s>`` last unless cut by the length limit)."""

    ids: tuple[int, ...]
    log_prob: float  # sum of the log-probabilities of the ids
    score: float  # log_prob / len(ids): Marian's length normalisation (normalize: 1.0)


@torch.inference_mode()
def greedy_decode(
    model: BergamotTransformer,
    memory: torch.Tensor,
    max_new: int,
    *,
    vocab: torch.Tensor | None = None,
) -> list[list[int]]:
    """Greedy decoding as the wheel's engine does it (beam 1).

    Args:
        model: the network in eval mode.
        memory: encoder output ``(B, S, d)``; the cross-attention K/V are computed from it once.
        max_new: the most output ids per sequence (``</s>`` included).
        vocab: ``(n,)`` the ids the output layer may produce (the shortlist), or None for all.

    Returns:
        For each sequence, its output ids, ending at ``</s>`` if produced within ``max_new``.
    """
    state = model.start(memory, vocab)

    def step(prev: torch.Tensor | None, state: DecoderState) -> tuple[torch.Tensor, DecoderState]:
        return model.decode_step(prev, state, narrow=True)  # (B, n): the shortlist's columns

    batch, eos = memory.shape[0], model.cfg.eos_id
    return greedy_loop(
        step, DecoderState.select, state, batch, eos, max_new, memory.device, columns=vocab
    )


@torch.inference_mode()
def beam_search(
    model: BergamotTransformer,
    memory: torch.Tensor,
    max_new: int,
    *,
    width: int,
    vocab: torch.Tensor | None = None,
) -> list[Hypothesis]:
    """Beam search as Marian runs it: a beam shrinks by one for every hypothesis that ends.

    Args:
        model: the network in eval mode.
        memory: encoder output ``(1, S, d)`` of one sentence.
        max_new: the most output ids (``</s>`` included).
        width: beam width; 1 is greedy decoding.
        vocab: ``(n,)`` the ids the output layer may produce (the shortlist), or None for all.

    Returns:
        ``width`` hypotheses, best ``score`` first.
    """
    if width < 1:
        raise ValueError(f"beam width {width}: use 1 (greedy) or more.")
    if memory.shape[0] != 1:
        raise ValueError(f"beam search takes one sentence; memory has {memory.shape[0]} rows.")
    state, prev = model.start(memory, vocab), None
    beams: list[tuple[int, ...]] = [()]
    totals = memory.new_zeros(1)  # (B,) log-probability of each live beam
    finished: list[Hypothesis] = []
    for step in range(max_new):
        logits, state = model.decode_step(prev, state)
        n_vocab = logits.shape[-1]
        cand = (totals[:, None] + F.log_softmax(logits, dim=-1)).flatten()  # (B * vocab,)
        top, flat = cand.topk(width - len(finished))  # (k,): the beam keeps k = width - finished
        rows, ids = flat // n_vocab, flat % n_vocab
        ends = (ids == model.cfg.eos_id) | (step == max_new - 1)  # (k,) bool
        for total, row, tok in zip(*(t[ends].tolist() for t in (top, rows, ids)), strict=True):
            hyp = (*beams[row], tok)
            finished.append(Hypothesis(hyp, total, total / len(hyp)))
        alive = ~ends
        if not bool(alive.any()):
            break
        beams = [
            (*beams[r], t) for r, t in zip(rows[alive].tolist(), ids[alive].tolist(), strict=True)
        ]
        state, prev, totals = state.select(rows[alive]), ids[alive], top[alive]
    return sorted(finished, key=lambda h: h.score, reverse=True)
