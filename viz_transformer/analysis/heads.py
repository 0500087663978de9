"""Does a head matter? Importance by ablation and value-weighted attention (activation patching,
which batches its runs the same way, is in ``analysis.patching``).

Every number comes from teacher-forced passes of the model (``LoadedModel.forced_logprobs``)
under hooks at ``hook_z``; many ablations or patches run in one pass by repeating the input
along the batch, one head (or one set of heads) per row.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from viz_transformer.analysis.ablation import (
    Ablation,
    check_mode,
    head_means,
    replace_heads,
)
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.results import LayerRuns
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.text.checks import check_text

BATCH = 64  # ablated copies per forward pass, at most
# a pass's batch holds at most this many attention cells per layer (rows x heads x q x k, ~80 MB
# of float32): 64 copies of a 1,000-token smollm2 pass took 8-15 GB
BATCH_CELLS = 20_000_000
PASS_S = 0.5  # seconds a pass aims at: progress, where a Stop is seen, comes about every second


def _chunks(n_rows: int, cells_per_row: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive batches over ``n_rows`` rows: the first of one row, each
    next sized from the time per row the previous took (``PASS_S`` a pass), never above
    ``BATCH`` nor ``BATCH_CELLS`` attention cells."""
    cap = max(1, min(BATCH, BATCH_CELLS // max(1, cells_per_row)))
    start, size = 0, 1
    while start < n_rows:
        end = min(n_rows, start + size)
        began = time.perf_counter()
        yield start, end  # the caller runs the batch before asking for the next
        per_row = (time.perf_counter() - began) / (end - start)
        size = max(1, min(cap, int(PASS_S / max(per_row, 1e-6))))
        start = end


TICK_S = 0.25  # seconds between two progress calls from inside the model's layers


@contextlib.contextmanager
def ticking(model: LoadedModel, progress: OnFraction | None) -> Iterator[OnFraction | None]:
    """While open, ``progress`` is also called (with the fraction last reported) from the
    model's layers, at most every ``TICK_S`` s: between batches alone, a Stop waited for a
    whole pass, and the greedy output and clean pass before them (13 s for 256 smollm2
    tokens) reported nothing. Yields the progress function to report fractions to."""
    if progress is None:
        yield None
        return
    done, last = [0.0], [time.monotonic()]

    def report(fraction: float) -> None:
        done[0], last[0] = fraction, time.monotonic()
        progress(fraction)

    def tick(_z: torch.Tensor, _name: str) -> None:  # reads only: the run is unchanged
        if time.monotonic() - last[0] >= TICK_S:
            report(done[0])

    facts = model.facts
    names = [
        model.hook_name(kind, layer, "hook_z")
        for kind in facts.kinds
        for layer in range(facts.shape(kind)[0])
    ]
    with model.hooked(dict.fromkeys(names, tick)):
        yield report


def _cells(model: LoadedModel, text: str, out_ids: Sequence[int], kind: AttentionKind) -> int:
    """Attention cells of one layer of one copy: heads x (source + output tokens)^2, a bound."""
    n = len(model.source_ids(text)[0]) + len(out_ids) + 1
    return model.attention_shape(kind)[1] * n * n


def all_heads(model: LoadedModel, kind: AttentionKind) -> list[tuple[int, int]]:
    layers, heads = model.attention_shape(kind)
    return [(layer, head) for layer in range(layers) for head in range(heads)]


def batched_scores(
    model: LoadedModel,
    text: str,
    out_ids: Sequence[int],
    kind: AttentionKind,
    rows: list[list[tuple[int, int]]],
    values: dict[str, torch.Tensor] | None,
    progress: OnFraction | None,
) -> np.ndarray:
    """Total log-probability of ``out_ids`` (and the end symbol) per row of ``rows``, each row
    run with its heads replaced. Returns ``(len(rows),)``.

    Where the model keeps a clean pass layer by layer (``LoadedModel.layer_runs``), rows are
    grouped by their lowest layer and each group reruns only the layers from there on (the
    layers below are the clean run's); otherwise every row runs whole, ``BATCH`` per pass."""
    runs = model.layer_runs(text, out_ids, kind) if any(rows) else None
    if runs is not None:
        cells = _cells(model, text, out_ids, kind)
        return _layered_scores(model, kind, runs, rows, values, progress, cells)
    totals = []
    for start, end in _chunks(len(rows), _cells(model, text, out_ids, kind)):
        chunk = rows[start:end]
        fns = replace_heads(model, kind, chunk, values)
        with model.hooked(fns):
            logprobs = model.forced_logprobs(text, out_ids, batch=len(chunk))  # (B, n)
        fns.check()
        totals.append(logprobs.sum(-1).cpu().numpy())
        if progress is not None:
            progress(min(1.0, end / len(rows)))
    return np.concatenate(totals).astype(np.float64)


def _layered_scores(
    model: LoadedModel,
    kind: AttentionKind,
    runs: LayerRuns,
    rows: list[list[tuple[int, int]]],
    values: dict[str, torch.Tensor] | None,
    progress: OnFraction | None,
    cells: int,
) -> np.ndarray:
    """``batched_scores`` from a clean pass kept layer by layer: rows without heads take the
    clean score; the others, ordered by their lowest layer, run in batches (``_chunks`` of
    ``cells`` attention cells a row), each from its lowest layer on."""
    totals = np.full(len(rows), float(runs.clean.sum()))
    first = {i: min(layer for layer, _ in heads) for i, heads in enumerate(rows) if heads}
    order = sorted(first, key=first.__getitem__)
    work = done = sum(runs.layers - first[i] for i in order)
    for start, end in _chunks(len(order), cells):
        chunk = order[start:end]
        fns = replace_heads(model, kind, [rows[i] for i in chunk], values)
        with model.hooked(fns):
            logprobs = runs.run([first[i] for i in chunk])  # (B, n)
        fns.check()
        totals[chunk] = logprobs.sum(-1).cpu().numpy()
        done -= sum(runs.layers - first[i] for i in chunk)
        if progress is not None:
            progress(1.0 - done / work)
    return totals


def head_importance(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    target: str | None = None,
    ablation: Ablation = "zero",
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> np.ndarray:
    """How much the output's log-probability drops when each head alone is ablated.

    importance(l, h) = log p(y | x) - log p(y | x, head (l, h) ablated), with y the model's own
    greedy output (or ``target``) scored by teacher forcing, end symbol included. One head at a
    time: heads that back each other up (redundant heads) each score near 0 even when ablating
    them together changes the output; ``vt.trace(..., ablate=[...])`` tests a set.

    Args:
        model: a model with an output; text: the input; kind: the attention kind.
        target: a reference output to score instead of the greedy one.
        ablation: ``"zero"`` or ``"mean"`` (the head's mean z over this input's positions).
        progress: called with the fraction done after each batch.
        stop: once set (from any thread), the work ends at its next progress point with
            ``records.progress.Cancelled``, leaving the model without hooks.

    Returns:
        float64 ``[layers, heads]`` in nats; negative where ablating a head helps the output.

    Raises:
        ValueError: a kind the model lacks, a model without output, bad text or mode.
    """
    text, mode = check_text(text), check_mode(ablation)
    heads = all_heads(model, kind)
    require_output(model)
    target = None if target is None else check_text(target, "target")
    with ticking(model, with_stop(progress, stop)) as report:
        out_ids = model.reference_ids(text, target)
        means = None
        if mode == "mean":
            names = sorted({model.hook_name(kind, layer, "hook_z") for layer, _ in heads})
            means = head_means(model, text, out_ids, names)
        rows = [[], *([head] for head in heads)]  # row 0 clean, in the same pass as the others
        totals = batched_scores(model, text, out_ids, kind, rows, means, report)
    layers, n_heads = model.attention_shape(kind)
    return (totals[0] - totals[1:]).reshape(layers, n_heads)


def require_output(model: LoadedModel) -> None:
    if model.spec.encoder_only:
        raise ValueError(
            f"{model.name} produces no output, so no head changes one; pick a model with a "
            "decoder (a translator or a language model)."
        )


def value_weighted(
    model: LoadedModel, text: str, kind: AttentionKind, target: str | None = None
) -> np.ndarray:
    """Norm-based attention (Kobayashi et al. 2020, "Attention is not only a weight"):
    ``||alpha_ij f_h(x_j)||`` with ``f_h(x_j) = v_j W^O_h`` (the value with its bias, times the
    head's slice of W^O): how much key j actually moves query i's residual stream through head h.

    It takes the model and the text, not a ``Trace``: a trace keeps the attention weights but
    not the values, so the pass is rerun (one teacher-forced pass, the trace's layout).

    Args:
        model: a model exposing ``head_output_weight``; text, target: as for ``vt.trace``.
        kind: the attention kind.

    Returns:
        float32 ``[layers, heads, q, k]`` in the trace's layout.
    """
    text = check_text(text)
    layers, _ = model.attention_shape(kind)
    target = None if target is None else check_text(target, "target")
    # a decoder-only trace covers the prompt (and a forced continuation), not its next token
    prompt_only = target is None and model.spec.decoder_only
    out_ids = [] if prompt_only else model.reference_ids(text, target)
    names = [
        (model.hook_name(kind, i, "hook_pattern"), model.hook_name(kind, i, "hook_v"))
        for i in range(layers)
    ]
    with model.recording([n for pair in names for n in pair]) as cache:
        model.forced_logprobs(text, out_ids)
    maps = []
    for layer, (p_name, v_name) in enumerate(names):
        alpha, v = cache[p_name], cache[v_name]  # (h, q, k), (h_kv, k, d_k)
        w_o = model.head_output_weight(kind, layer).to("cpu", torch.float32).numpy()
        v = np.repeat(v, alpha.shape[0] // v.shape[0], axis=0)  # grouped-query heads share v
        norms = np.linalg.norm(np.einsum("hkd,hde->hke", v, w_o), axis=-1)  # (h, k)
        maps.append(alpha * norms[:, None, :])
    return np.stack(maps).astype(np.float32)
