"""Decoding the paper's Transformer: padded batches, the source mask, and greedy decoding.

``greedy_decode(model, memory, max_new, *, ...)`` has the shape of ``marian_decode``'s; the paper
network needs the start and end ids of its tokenizer (it knows no ids itself) and, for a padded
batch, the source mask. ``greedy_batch`` goes from source id lists of any lengths to outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class _Rows:
    """What the greedy steps carry for the rows still decoding: the cache (or, uncached, the
    decoder inputs so far with the memory) and the source mask, all cut to the same rows."""

    cache: DecoderCache | None  # use_cache: the keys and values so far
    inputs: torch.Tensor  # (B', T) decoder inputs so far (uncached) or (B', 1) the start symbol
    memory: torch.Tensor  # (B', S, d)
    src_mask: torch.Tensor | None  # (B', 1, 1, S)

    def select(self, rows: torch.Tensor) -> _Rows:
        return _Rows(
            None if self.cache is None else self.cache.select(rows),
            self.inputs[rows],
            self.memory[rows],
            None if self.src_mask is None else self.src_mask[rows],
        )


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

    Rows leave the batch as they end (``greedy.greedy_loop``), so each row's ids are those of
    decoding its sentence alone.

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
    cache = model.start(memory) if use_cache else None

    def step(prev: torch.Tensor | None, rows: _Rows) -> tuple[torch.Tensor, _Rows]:
        if rows.cache is not None:
            new = rows.inputs if prev is None else prev[:, None]  # (B', 1)
            logits, cache = model.extend(rows.cache, rows.src_mask, new)
            return logits[:, -1], replace(rows, cache=cache)  # (B', vocab)
        ys = rows.inputs if prev is None else torch.cat([rows.inputs, prev[:, None]], dim=1)
        return model.decode(rows.memory, rows.src_mask, ys)[:, -1], replace(rows, inputs=ys)

    state = _Rows(cache, bos, memory, src_mask)
    return greedy_loop(step, _Rows.select, state, batch, eos_id, max_new, memory.device)


@torch.no_grad()
def greedy_batch(
    model: Transformer,
    sources: list[list[int]],
    max_new: int,
    *,
    pad_id: int,
    bos_id: int,
    eos_id: int,
) -> list[list[int]]:
    """Greedy outputs of source id lists of any lengths: padded, masked, encoded once, decoded
    together with finished rows dropped; each equals decoding that source alone.

    Args:
        model: the paper Transformer in eval mode (its device is where the batch is made).
        sources: one id list per sentence (``</s>`` included as the tokenizer gives it).
        max_new: the most output ids per sentence (``</s>`` included).
        pad_id, bos_id, eos_id: the tokenizer's padding, start and end ids.

    Returns:
        For each source, in order, its output ids ending at ``</s>`` if produced.
    """
    src = pad_batch(sources, pad_id, model.pe.device)  # (B, S)
    mask = source_mask(src, pad_id)  # (B, 1, 1, S)
    memory = model.encode(src, mask)  # (B, S, d)
    return greedy_decode(model, memory, max_new, bos_id=bos_id, eos_id=eos_id, src_mask=mask)
