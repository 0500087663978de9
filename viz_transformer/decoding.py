"""Autoregressive decoding of the paper model: the decoder input is always the start symbol
followed by the outputs so far ("outputs shifted right", section 3.1 and Figure 1)."""

from __future__ import annotations

import torch

from viz_transformer.models.paper import Transformer


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
) -> list[list[int]]:
    """Greedy decoding, one token per step, the encoder run once.

    Args:
        model: the paper Transformer in eval mode.
        src: (B, S) source ids; src_mask: (B, 1, 1, S) or None.
        max_new: the most output tokens per sequence (``</s>`` included).

    Returns:
        For each sequence, the output ids without the start symbol, ending at ``</s>`` if produced.
    """
    memory = model.encode(src, src_mask)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    for _ in range(max_new):
        next_id = model.decode(memory, src_mask, ys)[:, -1].argmax(-1)  # (B,)
        next_id = torch.where(done, torch.full_like(next_id, eos_id), next_id)
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        done |= next_id == eos_id
        if bool(done.all()):
            break
    out = []
    for row in ys[:, 1:].tolist():
        out.append(row[: row.index(eos_id) + 1] if eos_id in row else row)
    return out
