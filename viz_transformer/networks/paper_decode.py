"""Decoding the paper's Transformer: padded batches, the source mask, and greedy decoding.

``greedy_decode(model, memory, max_new, *, ...)`` has the shape of ``marian_decode``'s; the paper
network needs the start and end ids of its tokenizer (it knows no ids itself) and, for a padded
batch, the source mask.
"""

from __future__ import annotations

import torch

from viz_transformer.networks.greedy import greedy_loop
from viz_transformer.networks.paper import DecoderCache, Transformer


def pad_batch(seqs: list[list[int]], pad_id: int, device: torch.device | str) -> torch.Tensor:
    """Right-pad id lists into a ``(B, T)`` long tensor on ``device`` (the model's)."""
    width = max(len(s) for s in seqs)
    return torch.tensor(
        [s + [pad_id] * (width - len(s)) for s in seqs], dtype=torch.long, device=device
    )


def source_mask(src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """``(B, 1, 1, S)`` True where the source holds a real token, so no query attends to padding."""
    return (src != pad_id)[:, None, None, :]


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    memory: torch.Tensor,
    max_new: int,
    *,
    bos_id: int,
    eos_id: int,
    src_mask: torch.Tensor | None = None,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy decoding: each step feeds ``<s>`` + the outputs so far (section 3, "shifted right").

    Args:
        model: the paper Transformer in eval mode.
        memory: encoder output ``(B, S, d)`` of ``model.encode(src, src_mask)``.
        max_new: the most output ids per sequence (``</s>`` included).
        bos_id: the start symbol; eos_id: ``</s>``.
        src_mask: ``(B, 1, 1, S)`` from ``source_mask`` for a padded batch, or None.
        use_cache: run only the newest input each step against the key/value cache
            (``Transformer.extend``); False decodes the whole prefix again (same ids, slower).

    Returns:
        For each sequence, the output ids without the start symbol, ending at ``</s>`` if produced.
    """
    batch = memory.shape[0]
    bos = torch.full((batch, 1), bos_id, dtype=torch.long, device=memory.device)  # (B, 1)

    def cached(prev: torch.Tensor | None, cache: DecoderCache) -> tuple[torch.Tensor, DecoderCache]:
        logits, cache = model.extend(cache, src_mask, bos if prev is None else prev[:, None])
        return logits[:, -1], cache  # (B, vocab)

    def whole(prev: torch.Tensor | None, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ys = ys if prev is None else torch.cat([ys, prev[:, None]], dim=1)  # (B, T)
        return model.decode(memory, src_mask, ys)[:, -1], ys

    if use_cache:
        return greedy_loop(cached, model.start(memory), batch, eos_id, max_new, memory.device)
    return greedy_loop(whole, bos, batch, eos_id, max_new, memory.device)
