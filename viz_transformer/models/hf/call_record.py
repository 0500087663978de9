"""What a long input's capture keeps of one attention call (``CallRecord``), and the check that
the formula read from the call gives the model's own weights (``checked``).

Reading a call's arguments (``calls.read_call``) says what the model passes, not what its eager
function does with it: granite's sinks scale the output and leave the weights plain, gpt-oss's
join the weights' softmax. So before a call's map is left to the tiles, the model's own eager
function computes a few of its rows (``PROBE_ROWS``, in float32) and the tiles must give the same
weights there; where no reading of the formula does, the call's map is kept whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch

from viz_transformer.models.hf.calls import Attend, Call, attend_rows
from viz_transformer.records import tiles
from viz_transformer.records.formula import Formula

PROBE_ROWS = 8  # query rows of each call computed by the model's own function and compared
PROBE_ATOL = 2e-5  # largest difference of one weight, and of one row's sum
TINY = 1e-30  # a weight one side gives and the other gives exactly 0 counts above this


@dataclass(frozen=True)
class CallRecord:
    """One attention call at batch element 0: queries ``(H, n_q, d)`` and keys
    ``(H_kv, n_k, d)`` with the formula the tiles evaluate, or, for a call the tiles cannot
    read, its weights ``(H, n_q, n_k)`` (float32, host) and why (``why``). ``softmax`` is False
    for a module that returned weights without calling the attention function (linear
    attention: no softmax map)."""

    q: torch.Tensor | None = None
    k: torch.Tensor | None = None
    formula: Formula | None = None
    weights: torch.Tensor | None = None
    why: str = ""
    softmax: bool = True


def probe_rows(n_q: int, device: torch.device) -> torch.Tensor:
    """Up to ``PROBE_ROWS`` query rows spread over ``n_q``, the first and last included."""
    spread = torch.linspace(0, n_q - 1, min(n_q, PROBE_ROWS), device=device)
    return spread.round().long().unique()


def _tiled(query: torch.Tensor, key: torch.Tensor, f: Formula, rows: torch.Tensor) -> torch.Tensor:
    """Every head's weights at ``rows`` from the tiles, ``(H, len(rows), n_k)`` float32."""
    heads, group = query.shape[1], query.shape[1] // key.shape[1]
    out = torch.empty(heads, len(rows), key.shape[2], device="cpu")
    at = rows.to(query.device)
    for h in range(heads):
        one = tiles.HeadQK(query[0, h], key[0, h // group], scale=f.scale, formula=f, head=h)
        tiles.cells_into(out[h], one, at, None)
    return out


def _same(ours: torch.Tensor, ref: torch.Tensor) -> bool:
    """The tiles' weights equal the model's: each weight, each row's sum, and which are 0."""
    if not (torch.isfinite(ours).all() and torch.isfinite(ref).all()):
        return False
    one_sided = ((ours == 0) & (ref > TINY)) | ((ref == 0) & (ours > TINY))
    close = (ours - ref).abs().max() <= PROBE_ATOL
    sums = (ours.sum(-1) - ref.sum(-1)).abs().max() <= PROBE_ATOL
    return bool(close and sums and not one_sided.any())


def _float(v: Any) -> Any:
    return v.float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v


def checked(eager: Attend, call: Call, formula: Formula) -> Formula | None:
    """``formula``, or the same without its sinks (a model whose weights leave the sink out),
    whichever gives the model's own weights at ``probe_rows``; None when neither does."""
    query, key = call.query, call.key
    rows = probe_rows(query.shape[2], query.device)
    up = replace(
        call,
        query=query.float(),
        key=key.float(),
        value=call.value.float(),
        kwargs={k: _float(v) for k, v in call.kwargs.items()},
    )
    with torch.no_grad():
        ref = attend_rows(eager, up, rows)[1]
    if ref is None:
        return None
    ref = ref[0].float().cpu()
    candidates = [formula] + ([replace(formula, sinks=None)] if formula.sinks is not None else [])
    for f in candidates:
        if _same(_tiled(query, key, f, rows), ref):
            return f
    return None
