"""The one batched greedy decoder: every network and every caller decodes greedily through
``greedy_loop``, so all outputs end by the same rule and a batch gives what each row alone gives.

A network supplies ``step(prev, state) -> (logits, state)`` for one decoder position of the rows
still decoding, and ``select(state, rows) -> state`` keeping only some of those rows. The loop
drops a row from the batch as soon as it produces an end id, so later steps run only the
unfinished rows (most of the speed of batched decoding when lengths differ). Wrappers:
``paper_decode.greedy_decode`` / ``greedy_batch`` (the paper network, padded sources),
``marian_decode.greedy_decode`` (Bergamot) and ``models.hf.generate.greedy_ids`` (Hugging Face).

``on_step(callback)`` has every loop of this thread report ``callback(steps_done, max_new)``
after each step: how a long decode shows progress, and where an exception from the callback (a
page's Stop) ends it between two tokens, without a parameter through every adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import torch

State = TypeVar("State")
# prev (B',) ids chosen at the previous step by the rows still decoding, None at the first;
# returns logits (B', n) for those rows and the state after the step
Step = Callable[[torch.Tensor | None, State], tuple[torch.Tensor, State]]
# keep rows (B'',) long, indices into the current batch of the state, in order
Select = Callable[[State, torch.Tensor], State]
# (steps done, max_new) after each step of a loop; may raise to end the decoding there
StepCallback = Callable[[int, int], None]

# per thread (a ContextVar, as the hooks are): sessions sharing one cached model in threads each
# see only their own callback
_ON_STEP: ContextVar[StepCallback | None] = ContextVar("vt_on_step", default=None)


@contextmanager
def on_step(callback: StepCallback) -> Iterator[None]:
    """While open, every ``greedy_loop`` of this thread calls ``callback(steps_done, max_new)``
    after each step (counts restart at 1 in each loop; a loop that ends early stops calling).

    An exception the callback raises leaves the loop and this block at once; the callback is
    removed however the block ends, and an inner block replaces an outer one until it closes.
    """
    token = _ON_STEP.set(callback)
    try:
        yield
    finally:
        _ON_STEP.reset(token)


@torch.no_grad()
def greedy_loop(
    step: Step[State],
    select: Select[State],
    state: State,
    batch: int,
    eos_ids: int | Collection[int],
    max_new: int,
    device: torch.device,
    columns: torch.Tensor | None = None,
) -> list[list[int]]:
    """Pick the most likely id at every step; a row leaves the batch when it produces an end id.

    Each row's ids equal those of decoding that row alone (up to float rounding of a different
    batch size: the rows never see each other), since ``step`` and ``select`` keep rows apart.

    Args:
        step: one decoder position for the rows still decoding (see ``Step``); its first call
            (``prev`` None) runs all ``batch`` rows.
        select: narrows ``state`` to some of its rows (see ``Select``); called only when a row
            has finished, with the indices of the rows that go on.
        state: what ``step`` needs before the first position (a cache, or the inputs so far),
            for all ``batch`` rows.
        batch: B, the number of sequences decoded together.
        eos_ids: the end id, or several (a Hugging Face model may have more than one).
        max_new: the most output ids per sequence (the end id included).
        device: the model's device, where the loop's own tensors live.
        columns: (n,) sorted ids of the logits' columns when ``step`` returns only some ids (a
            shortlist), else None; sorted, so the first maximum is the id a full row would pick.

    Returns:
        For each of the ``batch`` sequences, in input order, its output ids, ending at the end
        id it produced, or ``max_new`` ids long if it produced none.

    Raises:
        Whatever an ``on_step`` callback raises, after the step that called it.
    """
    ends = torch.tensor(
        [eos_ids] if isinstance(eos_ids, int) else sorted(eos_ids), dtype=torch.long, device=device
    )
    outs: list[list[int]] = [[] for _ in range(batch)]
    live = torch.arange(batch, device=device)  # (B',) input row of each row still decoding
    prev: torch.Tensor | None = None
    report = _ON_STEP.get()
    for done in range(1, max_new + 1):
        logits, state = step(prev, state)  # (B', n)
        best = logits.argmax(-1)  # (B',)
        prev = best if columns is None else columns[best]
        for row, tok in zip(live.tolist(), prev.tolist(), strict=True):
            outs[row].append(tok)
        if report is not None:
            report(done, max_new)
        going = ~torch.isin(prev, ends)  # (B',)
        if not bool(going.all()):
            if not bool(going.any()):
                break
            keep = going.nonzero().squeeze(1)  # (B'',) positions in the current batch
            state, prev, live = select(state, keep), prev[keep], live[keep]
    return outs
