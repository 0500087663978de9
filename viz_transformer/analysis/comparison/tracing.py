"""What both sides of a comparison share: resolving models, checking the kind, the sentences and
the tokens, and tracing with errors that name the model and sentence.

A comparison only means something when the two traces label their rows and columns with the same
tokens; ``check_tokens`` refuses, with the first difference, a pair that does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.kinds import KIND_SHORT, KINDS, AttentionKind
from viz_transformer.records.trace import Trace

ModelRef = str | LoadedModel  # a name ("paper-en-pt", "paper:<folder>", "hf:<id>") or a model


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


def check_sentences(sentences: Sequence[str]) -> tuple[str, ...]:
    """The non-empty sentences, stripped (one string counts as one sentence)."""
    if isinstance(sentences, str):
        sentences = [sentences]
    kept = tuple(s.strip() for s in sentences if s.strip())
    if not kept:
        raise ValueError("no sentences: give at least one non-empty sentence.")
    return kept


def check_tokens(ref: Trace, other: Trace, kind: AttentionKind, number: int, sentence: str) -> None:
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


def forced_target(name: str, output: str, number: int) -> str:
    """``output`` to teacher-force on, or a ValueError when model ``name`` output nothing."""
    if not output.strip():
        raise ValueError(
            f"{name} outputs nothing for sentence {number}: there is no output to "
            "teacher-force the models on; pick another sentence."
        )
    return output


def traced(model: LoadedModel, text: str, target: str | None, number: int) -> Trace:
    """``vt.trace``, its ValueError prefixed with the model and sentence it concerns."""
    try:
        return trace(model, text, target)
    except ValueError as exc:
        raise ValueError(f"{model.name}, sentence {number} (“{text}”): {exc}") from None


def patterns(traces: Sequence[Trace], kind: AttentionKind) -> list[np.ndarray]:
    """``kind``'s ``[layers, heads, q, k]`` of each trace (a lazy one computed in full)."""
    return [np.asarray(tr.get(kind)) for tr in traces]
