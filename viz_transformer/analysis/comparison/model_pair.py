"""Two models compared head by head on the same sentences (``vt.compare``).

``compare`` traces both models on every sentence (for the decoder and cross kinds both are
teacher-forced on model A's greedy output, so their rows align), checks that they split each
sentence into the same tokens (``tracing``), and hands the patterns to ``distances``
(Jensen-Shannon distances, Hungarian matching).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.comparison.distances import HeadMatch, head_distances, match_heads
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
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace


@dataclass(frozen=True)
class Comparison:
    """Model A against model B on one attention kind.

    Attributes:
        distance: float64 ``[layers_a, heads_a, layers_b, heads_b]``, the mean Jensen-Shannon
            distance (log base 2, in [0, 1]) over every query row of every sentence.
        matching: the least-total-distance one-to-one pairs ``((layer_a, head_a), (layer_b,
            head_b), distance)``, sorted by A's (layer, head).
        traces_a, traces_b: per sentence, the traces the distances were computed from (B
            teacher-forced on A's output for the decoder and cross kinds).
        rows: query rows averaged over.
    """

    model_a: str
    model_b: str
    kind: AttentionKind
    sentences: tuple[str, ...]
    distance: np.ndarray
    matching: tuple[HeadMatch, ...]
    traces_a: tuple[Trace, ...]
    traces_b: tuple[Trace, ...]
    rows: int


def _greedy_outputs(model: LoadedModel, sentences: Sequence[str]) -> list[str]:
    """``model``'s greedy output of every sentence (batched where the family can)."""
    try:
        return model.greedy_outputs(sentences)
    except ValueError:  # say which sentence: trace them one by one
        return [traced(model, text, None, n).output_text for n, text in enumerate(sentences, 1)]


def _encoder_trace(model: LoadedModel, text: str, number: int) -> Trace:
    """A trace whose encoder rows are the model's own: an encoder-decoder is teacher-forced on
    the source text itself, since the encoder never reads the output and a forced pass costs a
    third of greedy decoding; where that text is no valid output, it decodes greedily."""
    if model.spec.encoder_decoder:
        try:
            return trace(model, text, text)
        except ValueError:
            pass
    return traced(model, text, None, number)


def paired_traces(
    a: LoadedModel, b: LoadedModel, sentences: Sequence[str], kind: AttentionKind
) -> tuple[tuple[Trace, ...], tuple[Trace, ...]]:
    """Per sentence, A's and B's traces, both teacher-forced on A's greedy output (decoded in
    one batch where A's family can) for the decoder and cross kinds; for the encoder kind, each
    model's own encoder rows (``_encoder_trace``). Each pair is checked to show ``kind`` over
    the same tokens."""
    traces_a, traces_b = [], []
    outputs = _greedy_outputs(a, sentences) if kind != "encoder" else []
    for number, text in enumerate(sentences, 1):
        if kind == "encoder":
            tr_a, tr_b = _encoder_trace(a, text, number), _encoder_trace(b, text, number)
        else:
            target = forced_target(a.name, outputs[number - 1], number)
            tr_a, tr_b = traced(a, text, target, number), traced(b, text, target, number)
        check_tokens(tr_a, tr_b, kind, number, text)
        traces_a.append(tr_a)
        traces_b.append(tr_b)
    return tuple(traces_a), tuple(traces_b)


def compare(
    a: ModelRef, b: ModelRef, sentences: Sequence[str], kind: AttentionKind = "encoder"
) -> Comparison:
    """Compare every head of model A with every head of model B on ``sentences``.

    Args:
        a, b: model names (``paper:<folder>`` and ``hf:<id>`` too) or loaded models.
        sentences: the inputs; every query row of every sentence weighs the same.
        kind: ``"encoder"``, ``"decoder"`` or ``"cross"``; for the last two both models are
            teacher-forced on A's greedy output, so their rows align.

    Returns:
        A ``Comparison`` with ``.distance`` ``[layers_a, heads_a, layers_b, heads_b]`` and
        ``.matching`` (the Hungarian assignment).

    Raises:
        ValueError: a model without ``kind``, a pair that tokenizes a sentence differently, no
            sentences, or input a model cannot take.
    """
    model_a, model_b = resolve(a), resolve(b)
    kind = check_kind(model_b, check_kind(model_a, kind))
    texts = check_sentences(sentences)
    traces_a, traces_b = paired_traces(model_a, model_b, texts, kind)
    pa, pb = patterns(traces_a, kind), patterns(traces_b, kind)
    distance = head_distances(pa, pb)
    return Comparison(
        model_a=model_a.name,
        model_b=model_b.name,
        kind=kind,
        sentences=texts,
        distance=distance,
        matching=match_heads(distance),
        traces_a=traces_a,
        traces_b=traces_b,
        rows=sum(p.shape[2] for p in pa),
    )
