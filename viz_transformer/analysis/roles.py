"""What is a head for? Scores of known head roles, computed from attention patterns alone.

Each score is the attention mass a head puts where its role says it should look, averaged over
the query rows where the role applies, so it lies in [0, 1] (1: the head does exactly that).
A is one head's pattern ``[q, k]``, t the token strings of the attended sequence.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.heads import ticking
from viz_transformer.analysis.stepping import decoding, part
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.records.trace import Trace

# role -> (what the score means, formula, where the role comes from); the page's legend
ROLES: dict[str, tuple[str, str, str]] = {
    "previous": (
        "attends to the token just before it",
        "mean over i >= 1 of A[i, i-1]",
        "Clark et al. 2019, 'What does BERT look at?'; TransformerLens head detector",
    ),
    "self": (
        "attends to itself (the diagonal)",
        "mean over i of A[i, i]",
        "Clark et al. 2019; Voita et al. 2019 ('positional' heads)",
    ),
    "first": (
        "parks its attention on the first token (an attention sink)",
        "mean over queries of A[i, 0] (i >= 1 under a causal mask, whose row 0 is always 1)",
        "Xiao et al. 2023, 'Efficient streaming language models with attention sinks'",
    ),
    "aligning": (
        "cross-attention that follows a word alignment: the monotone diagonal or the reversed "
        "anti-diagonal, whichever fits better (or a given alignment)",
        "max over the two alignments a of mean over rows i of A[i, a(i)], with the last row "
        "(predicting </s>) aligned to the last source token",
        "Bahdanau et al. 2015; Voita et al. 2019; Garg et al. 2019 (alignment heads)",
    ),
    "duplicate": (
        "attends to earlier copies of the same token",
        "mean over rows i with t[j] = t[i] for some j < i of the sum of A[i, j] over those j",
        "Wang et al. 2022, 'Interpretability in the wild' (duplicate-token heads)",
    ),
    "induction": (
        "attends to the token that followed the earlier copy of the current token (A B ... A -> B)",
        "mean over rows i with t[j] = t[i], j + 1 < i, of the sum of A[i, j+1] over those j, on "
        "the input's words shuffled and repeated",
        "Olsson et al. 2022, 'In-context learning and induction heads'",
    ),
}
SELF_ROLES = ("previous", "self", "first", "duplicate", "induction")
CROSS_ROLES = ("first", "aligning")


def diagonal_score(pattern: np.ndarray, offset: int, causal: bool) -> np.ndarray:
    """``[..., q, k]`` -> ``[...]``: mean of ``A[i, i - offset]`` over rows where it exists.

    offset 1: previous token; 0: self. ``causal`` drops row 0 for offset 0, where a causal
    mask forces the weight to 1.
    """
    n = min(pattern.shape[-2], pattern.shape[-1])
    rows = np.arange(offset + (1 if causal and offset == 0 else 0), n)
    if rows.size == 0:
        return np.zeros(pattern.shape[:-2])
    return pattern[..., rows, rows - offset].mean(-1)


def first_score(pattern: np.ndarray, causal: bool) -> np.ndarray:
    """``[..., q, k]`` -> ``[...]``: mean of ``A[i, 0]`` (rows from 1 when ``causal``)."""
    rows = pattern[..., 1 if causal else 0 :, 0]
    return rows.mean(-1) if rows.shape[-1] else np.zeros(pattern.shape[:-2])


def repeat_score(pattern: np.ndarray, tokens: tuple[str, ...], shift: int) -> np.ndarray:
    """``[..., q, k]`` -> ``[...]``: shift 0 is the duplicate-token score, 1 the induction score
    (formulas in ``ROLES``) over the sequence ``tokens`` (the keys, which are also the queries).
    """
    masks = np.zeros(pattern.shape[-2:], dtype=bool)
    for i, tok in enumerate(tokens[: pattern.shape[-2]]):
        for j in range(i):
            if tokens[j] == tok and j + shift < i:
                masks[i, j + shift] = True
    rows = masks.any(-1)
    if not rows.any():
        return np.zeros(pattern.shape[:-2])
    return (pattern * masks).sum(-1)[..., rows].mean(-1)


def alignment_score(
    pattern: np.ndarray, alignment: list[tuple[int, int]] | None = None
) -> np.ndarray:
    """``[..., T, S]`` cross-attention -> ``[...]``: the ``aligning`` score of ``ROLES``;
    ``alignment`` (pairs (row, source position)) replaces the two default alignments."""
    T, S = pattern.shape[-2:]
    if alignment is not None:
        return np.mean([pattern[..., i, j] for i, j in alignment], axis=0)
    rows = np.arange(T - 1)
    scaled = np.rint(rows * (S - 2) / max(T - 2, 1)).astype(int).clip(0, max(S - 2, 0))
    scores = []
    for cols in (scaled, max(S - 2, 0) - scaled):  # monotone, reversed
        mass = np.concatenate([pattern[..., rows, cols], pattern[..., -1:, S - 1]], axis=-1)
        scores.append(mass.mean(-1))
    return np.maximum(*scores)


def repeated_text(text: str, seed: int = 0) -> str:
    """The words of ``text`` in a random order (seed fixed), then the same again: each token of
    the second half repeats one of the first, after a context no grammar predicts."""
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words + words)


def _tokens(tr: Trace, kind: AttentionKind) -> tuple[str, ...]:
    return tr.src_tokens if kind == "encoder" else tr.tgt_tokens


def head_roles(
    model: LoadedModel,
    kind: AttentionKind,
    text: str | None = None,
    alignment: list[tuple[int, int]] | None = None,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> dict[str, np.ndarray]:
    """Role scores of every head of ``kind`` (see ``ROLES`` for each formula and its source).

    Args:
        model: any model; kind: the attention kind.
        text: the input (default: the model's example). Positional roles are read on it; the
            duplicate and induction scores on ``repeated_text(text)``.
        alignment: for cross-attention, (row, source position) pairs to score instead of the
            monotone and reversed alignments.
        progress: called with the fraction done after each greedy step of the traces, from
            inside the model's layers at most every ``heads.TICK_S`` s, and with 1 at the end.
        stop: once set (from any thread), the work ends at its next progress point with
            ``records.progress.Cancelled``, leaving the model without hooks.

    Returns:
        role -> float64 ``[layers, heads]``: previous, self, first, duplicate and induction
        for self-attention; first and aligning for cross-attention.
    """
    model.attention_shape(kind)  # a kind the model lacks is refused here, with the fix
    text = model.spec.example if text is None else text
    with ticking(model, with_stop(progress, stop)) as report:
        # cross-attention: one trace, then its layers; self-attention: the text, then repeated
        with decoding(model, report, 0.0, 0.4 if kind == "cross" else 0.2):
            patterns = trace(model, text).get(kind)
        if kind == "cross":
            cross = functools.partial(_cross_roles, alignment=alignment)
            return by_layer(patterns, cross, report, (0.4, 1.0))
        positional = functools.partial(_positional_roles, causal=kind == "decoder")
        scores = by_layer(patterns, positional, report, (0.2, 0.5))
        with decoding(model, report, 0.5, 0.7):
            repeated = trace(model, repeated_text(text))
        repeats = functools.partial(_repeat_roles, tokens=_tokens(repeated, kind))
        return scores | by_layer(repeated.get(kind), repeats, report, (0.7, 1.0))


def _cross_roles(a: np.ndarray, alignment: list[tuple[int, int]] | None) -> dict[str, np.ndarray]:
    return {"first": first_score(a, False), "aligning": alignment_score(a, alignment)}


def _positional_roles(a: np.ndarray, causal: bool) -> dict[str, np.ndarray]:
    return {
        "previous": diagonal_score(a, 1, causal),
        "self": diagonal_score(a, 0, causal),
        "first": first_score(a, causal),
    }


def _repeat_roles(a: np.ndarray, tokens: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {"duplicate": repeat_score(a, tokens, 0), "induction": repeat_score(a, tokens, 1)}


def by_layer(
    patterns: np.ndarray | LazyPatterns,
    score: Callable[[np.ndarray], dict[str, np.ndarray]],
    report: OnFraction | None,
    span: tuple[float, float],
) -> dict[str, np.ndarray]:
    """``score`` of each layer's float64 ``[heads, q, k]`` weights, stacked to ``[layers,
    heads]`` per role: one layer's weights at a time (a long trace's are computed when asked;
    all of smollm2's at once took 0.3 GB for 512 tokens and were refused), and progress through
    ``span`` (from, to) after each layer."""
    report, rows = part(report, *span), []
    for layer in range(len(patterns)):
        rows.append(score(np.asarray(patterns[layer], dtype=np.float64)))
        if report is not None:
            report((layer + 1) / len(patterns))
    return {role: np.stack([row[role] for row in rows]) for role in rows[0]}
