"""Attention flow (Abnar & Zuidema 2020): how much of each input token can reach a position, as a
maximum flow through the layers' attention graph.

The graph is rollout's (``aggregate.with_residual``): one node per token per stream level (level 0
the input, level l + 1 after layer l), an edge from position i at level l + 1 down to position j at
level l with capacity ``A_l[i, j]`` (the heads' mean plus the residual, rows renormalised). Flow
``[l, i, j]`` is the maximum flow from position i after layer l down to input token j, rows
normalised to sum 1 as Abnar & Zuidema do. Where rollout multiplies the layers' matrices (every
path counts), flow lets each edge carry no more than its capacity, shared among paths.

One maximum-flow problem per (layer, query, input token): ``layers * n * n`` of them, each on a
graph of ``layers * n * n`` edges, solved by scipy's Dinic on integer capacities (``SCALE`` steps
per unit, so each flow is exact to about ``n * layers / SCALE``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from viz_transformer.analysis.aggregate import with_residual
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.progress import StopToken, with_stop
from viz_transformer.records.trace import Trace

SCALE = 2**26  # integer capacity of a weight of 1 (scipy's maximum flow takes int32)
MAX_TOKENS = 64  # the longest input the app computes flow for (docs/benchmarks.md has its time)
PROGRESS_EVERY = 0.25  # seconds between progress reports (each one is a message to the page)


def _graph(mixed: np.ndarray, layers: int) -> csr_array:
    """The attention graph of the first ``layers`` layers, ``(layers + 1) * n`` nodes, edges
    from level l + 1 down to level l with integer capacities."""
    n = mixed.shape[-1]
    rows, cols, caps = [], [], []
    for layer in range(layers):
        i, j = np.nonzero(mixed[layer] > 0)
        rows.append((layer + 1) * n + i)
        cols.append(layer * n + j)
        caps.append(np.rint(mixed[layer, i, j] * SCALE))
    size = (layers + 1) * n
    data = np.concatenate(caps).astype(np.int32)
    return csr_array((data, (np.concatenate(rows), np.concatenate(cols))), shape=(size, size))


def flow_values(mixed: np.ndarray, progress: Callable[[float], None] | None = None) -> np.ndarray:
    """Maximum flow from every position after each layer to every input token, not normalised.

    Args:
        mixed: ``[layers, n, n]`` row-stochastic matrices (``with_residual``).
        progress: called with the fraction done, at most every ``PROGRESS_EVERY`` seconds
            (and at the end): where a Stop interrupts the work.

    Returns:
        ``[layers, n, n]`` float64; element ``[l, i, j]`` is at most 1 (``i``'s edges carry 1).
    """
    n_layers, n, _ = mixed.shape
    out = np.zeros((n_layers, n, n))
    reported = time.monotonic()
    for layer in range(n_layers):
        graph = _graph(mixed, layer + 1)
        for i in range(n):
            source = (layer + 1) * n + i
            for j in range(n):
                out[layer, i, j] = maximum_flow(graph, source, j, method="dinic").flow_value
            done = (layer * n + i + 1) / (n_layers * n)
            if progress is not None and (time.monotonic() - reported > PROGRESS_EVERY or done == 1):
                progress(done)
                reported = time.monotonic()
    return out / SCALE


def attention_flow(
    trace: Trace,
    kind: AttentionKind,
    progress: Callable[[float], None] | None = None,
    max_tokens: int | None = MAX_TOKENS,
    stop: StopToken | None = None,
) -> np.ndarray:
    """Attention flow of self-attention ``kind``, ``[layers, n, n]`` like ``rollout``: row ``i``
    of element ``l`` shares out 1 over the input tokens by how much flow each can send to
    position ``i`` after layer ``l``.

    Args:
        trace: from ``vt.trace``; kind: ``"encoder"`` or ``"decoder"`` (self-attention).
        progress: called with the fraction done (``flow_values``).
        max_tokens: refuse longer inputs (the cost grows as ``n**4``); None: no limit.
        stop: once set (from any thread), the work ends at its next progress point with
            ``records.progress.Cancelled``.

    Raises:
        ValueError: a kind the trace lacks, cross-attention, or an input over ``max_tokens``.
    """
    arr = trace.get(kind)
    if arr is None:
        raise ValueError(f"this trace has no {kind} attention; pick a kind it shows.")
    n = arr.shape[-1]
    if max_tokens is not None and n > max_tokens:
        raise ValueError(
            f"Attention flow solves {arr.shape[0] * n * n:,} maximum-flow problems for {n} "
            f"tokens; it is offered up to {max_tokens} tokens. Shorten the input, or use rollout."
        )
    flows = flow_values(with_residual(arr, "attention flow"), with_stop(progress, stop))
    totals = flows.sum(axis=-1, keepdims=True)
    return flows / np.where(totals > 0, totals, 1.0)
