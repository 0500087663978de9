"""Two models, or the checkpoints of one training, compared head by head on the same sentences.

``compare`` traces both models on every sentence (for the decoder and cross kinds both are
teacher-forced on model A's greedy output, so their rows align), checks that they split each
sentence into the same tokens, and hands the patterns to ``analysis.compare`` (Jensen-Shannon
distances, Hungarian matching). ``drift`` measures how far each head of every checkpoint is from
the same head of the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.compare import (
    HeadMatch,
    drift_from_patterns,
    head_distances,
    match_heads,
)
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.kinds import KIND_SHORT, KINDS, AttentionKind
from viz_transformer.records.trace import Trace

ModelRef = str | LoadedModel  # a name ("paper-en-pt", "paper:<folder>", "hf:<id>") or a model


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


def resolve(model: ModelRef) -> LoadedModel:
    """A loaded model for a name (``vt.load_model``) or the model itself."""
    return load_model(model) if isinstance(model, str) else model


def check_kind(model: LoadedModel, kind: str) -> AttentionKind:
    """``kind`` when ``model`` shows it, else a ValueError naming the kinds it has."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: choose one of {', '.join(KINDS)}.")
    if kind not in model.spec.kinds:
        has = ", ".join(f"{k} ({KIND_SHORT[k]})" for k in model.spec.kinds)
        raise ValueError(
            f"{model.name} has no {KIND_SHORT[kind]} attention (kind={kind!r}); "
            f"it shows {has}. Compare on a kind both models show."
        )
    return kind  # type: ignore[return-value]


def _check_sentences(sentences: Sequence[str]) -> tuple[str, ...]:
    if isinstance(sentences, str):
        sentences = [sentences]
    kept = tuple(s.strip() for s in sentences if s.strip())
    if not kept:
        raise ValueError("no sentences: give at least one non-empty sentence.")
    return kept


def _check_tokens(
    ref: Trace, other: Trace, kind: AttentionKind, number: int, sentence: str
) -> None:
    """A ValueError when ``other`` labels ``kind``'s rows or columns with other tokens."""
    for mine, theirs in zip(ref.tokens_for(kind), other.tokens_for(kind), strict=True):
        if mine != theirs:
            at = next(
                (i for i, (x, y) in enumerate(zip(mine, theirs, strict=False)) if x != y), None
            )
            at = min(len(mine), len(theirs)) if at is None else at
            first = " ".join(mine[max(0, at - 2) : at + 3])
            second = " ".join(theirs[max(0, at - 2) : at + 3])
            raise ValueError(
                f"{ref.model_name} and {other.model_name} tokenize sentence {number} "
                f"(“{sentence}”) differently: {len(mine)} vs {len(theirs)} tokens, first "
                f"difference at token {at} (“{first}” vs “{second}”). Attention rows of "
                "different tokens cannot be compared: pick two models with the same tokenizer."
            )


def _forced_target(name: str, output: str, number: int) -> str:
    if not output.strip():
        raise ValueError(
            f"{name} outputs nothing for sentence {number}: there is no output to "
            "teacher-force the models on; pick another sentence."
        )
    return output


def _greedy_outputs(model: LoadedModel, sentences: Sequence[str]) -> list[str]:
    """``model``'s greedy output of every sentence (batched where the family can)."""
    try:
        return model.greedy_outputs(sentences)
    except ValueError:  # say which sentence: trace them one by one
        return [_trace(model, text, None, n).output_text for n, text in enumerate(sentences, 1)]


def _trace(model: LoadedModel, text: str, target: str | None, number: int) -> Trace:
    """``vt.trace``, its ValueError prefixed with the model and sentence it concerns."""
    try:
        return trace(model, text, target)
    except ValueError as exc:
        raise ValueError(f"{model.name}, sentence {number} (“{text}”): {exc}") from None


def _encoder_trace(model: LoadedModel, text: str, number: int) -> Trace:
    """A trace whose encoder rows are the model's own: an encoder-decoder is teacher-forced on
    the source text itself, since the encoder never reads the output and a forced pass costs a
    third of greedy decoding; where that text is no valid output, it decodes greedily."""
    if model.spec.encoder_decoder:
        try:
            return trace(model, text, text)
        except ValueError:
            pass
    return _trace(model, text, None, number)


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
            target = _forced_target(a.name, outputs[number - 1], number)
            tr_a, tr_b = _trace(a, text, target, number), _trace(b, text, target, number)
        _check_tokens(tr_a, tr_b, kind, number, text)
        traces_a.append(tr_a)
        traces_b.append(tr_b)
    return tuple(traces_a), tuple(traces_b)


def patterns(traces: Sequence[Trace], kind: AttentionKind) -> list[np.ndarray]:
    """``kind``'s ``[layers, heads, q, k]`` of each trace (a lazy one computed in full)."""
    return [np.asarray(tr.get(kind)) for tr in traces]


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
    texts = _check_sentences(sentences)
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
    texts = _check_sentences(sentences)
    last = [_trace(models[-1], text, None, n) for n, text in enumerate(texts, 1)]
    out: list[tuple[Trace, ...]] = []
    for model in models[:-1]:
        traces = []
        for number, (text, ref) in enumerate(zip(texts, last, strict=True), 1):
            target = (
                ref.output_text
                if kind == "encoder"
                else _forced_target(ref.model_name, ref.output_text, number)
            )
            tr = _trace(model, text, target or None, number)
            _check_tokens(ref, tr, kind, number, text)
            traces.append(tr)
        out.append(tuple(traces))
    return [*out, tuple(last)]


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
    traces = checkpoint_traces(checkpoints, sentences, kind)
    return drift_from_patterns([patterns(t, kind) for t in traces])
