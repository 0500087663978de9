"""The greedy loop both networks decode with, so their outputs end by the same rule.

A network supplies one ``step(prev, state) -> (logits, state)``; ``paper_decode`` and
``marian_decode`` wrap this loop as ``greedy_decode(model, memory, max_new, *, ...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

State = TypeVar("State")
# prev (B,) ids chosen at the previous step, None at the first; returns logits (B, vocab)
Step = Callable[[torch.Tensor | None, State], tuple[torch.Tensor, State]]


def greedy_loop(
    step: Step[State],
    state: State,
    batch: int,
    eos_id: int,
    max_new: int,
    device: torch.device,
    columns: torch.Tensor | None = None,
) -> list[list[int]]:
    """Pick the most likely id at every step until each row has produced ``</s>``.

    Args:
        step: one decoder position for the whole batch (see ``Step``).
        state: what ``step`` needs before the first position (a cache, or the inputs so far).
        batch: B, the number of sequences decoded together.
        eos_id: ``</s>``.
        max_new: the most output ids per sequence (``</s>`` included).
        device: the model's device, where the loop's own tensors live.
        columns: (n,) sorted ids of the logits' columns when ``step`` returns only some ids (a
            shortlist), else None; sorted, so the first maximum is the id a full row would pick.

    Returns:
        For each sequence, its output ids, ending at ``</s>`` if it was produced.
    """
    out: list[torch.Tensor] = []  # per step (B,): stacked once at the end
    done = torch.zeros(batch, dtype=torch.bool, device=device)  # (B,)
    prev: torch.Tensor | None = None
    for _ in range(max_new):
        logits, state = step(prev, state)  # (B, vocab)
        # a finished row keeps emitting </s> so the batch steps on together; cut below
        best = logits.argmax(-1)  # (B,)
        prev = (best if columns is None else columns[best]).masked_fill(done, eos_id)
        out.append(prev)
        done |= prev == eos_id
        if bool(done.all()):
            break
    rows = torch.stack(out, dim=1).tolist() if out else [[] for _ in range(batch)]  # (B, steps)
    return [row[: row.index(eos_id) + 1] if eos_id in row else row for row in rows]
