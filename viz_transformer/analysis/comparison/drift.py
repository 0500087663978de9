"""The checkpoints of one training compared head by head (``vt.drift``).

Every checkpoint is teacher-forced on the last checkpoint's greedy output (an early checkpoint's
own output is noise, and forcing keeps the rows aligned); each head's distance to the same head of
the last checkpoint comes from ``distances.drift_from_patterns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from viz_transformer.analysis.comparison.distances import drift_from_patterns
from viz_transformer.analysis.comparison.tracing import (
    ModelRef,
    check_kind,
    check_sentences,
    check_tokens,
    forced_target,
    patterns,
    resolve,
    traced,
)
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace


@dataclass(frozen=True)
class Drift:
    """A run's checkpoints against its last one, on one attention kind.

    Attributes:
        distance: float64 ``[checkpoints, layers, heads]``, each head's mean Jensen-Shannon
            distance to the same head of the last checkpoint; the last row is 0.
        traces: per checkpoint (in training order), per sentence, the trace it came from, so a
            head can be shown at each checkpoint.
    """

    distance: np.ndarray
    traces: tuple[tuple[Trace, ...], ...]


def checkpoint_traces(
    checkpoints: Sequence[ModelRef], sentences: Sequence[str], kind: AttentionKind = "encoder"
) -> list[tuple[Trace, ...]]:
    """Per checkpoint, per sentence, its trace teacher-forced on the last checkpoint's greedy
    output (an early checkpoint's own output is noise, and forcing keeps the rows aligned)."""
    models = [resolve(c) for c in checkpoints]
    if not models:
        raise ValueError("no checkpoints: give at least one.")
    for model in models:
        check_kind(model, kind)
    texts = check_sentences(sentences)
    last = [traced(models[-1], text, None, n) for n, text in enumerate(texts, 1)]
    out: list[tuple[Trace, ...]] = []
    for model in models[:-1]:
        traces = []
        for number, (text, ref) in enumerate(zip(texts, last, strict=True), 1):
            target = (
                ref.output_text
                if kind == "encoder"
                else forced_target(ref.model_name, ref.output_text, number)
            )
            tr = traced(model, text, target or None, number)
            check_tokens(ref, tr, kind, number, text)
            traces.append(tr)
        out.append(tuple(traces))
    return [*out, tuple(last)]


def checkpoint_drift(
    checkpoints: Sequence[ModelRef], sentences: Sequence[str], kind: AttentionKind = "encoder"
) -> Drift:
    """``drift`` with the traces behind it (``Drift``): what the Compare page shows."""
    traces = checkpoint_traces(checkpoints, sentences, kind)
    distance = drift_from_patterns([patterns(t, kind) for t in traces])
    return Drift(distance=distance, traces=tuple(traces))


def drift(
    checkpoints: Sequence[ModelRef], sentences: Sequence[str], kind: AttentionKind = "encoder"
) -> np.ndarray:
    """How far each head of each checkpoint is from the same head of the last checkpoint.

    Args:
        checkpoints: names (``paper:<folder>``) or loaded models, in training order.
        sentences: the inputs; every query row of every sentence weighs the same.
        kind: the attention kind (every checkpoint must show it).

    Returns:
        float64 ``[checkpoints, layers, heads]``: mean Jensen-Shannon distance of a head to the
        same (layer, head) of the last checkpoint; the last row is 0. It shows when in
        training each head settled.
    """
    return checkpoint_drift(checkpoints, sentences, kind).distance
