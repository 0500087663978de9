"""Activation patching (Meng et al. 2022; Wang et al. 2022): each head's output z from a clean
run put into a corrupted run, and how much of the difference between their outputs it restores.
The patched runs are batched as ``analysis.heads`` batches ablations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from viz_transformer.analysis.ablation import check_heads, record_z
from viz_transformer.analysis.heads import all_heads, batched_scores, require_output, ticking
from viz_transformer.analysis.stepping import decoding, part
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.text.checks import check_text


def _clean_z(
    model: LoadedModel, text: str, out_ids: Sequence[int], names: list[str]
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    fns, kept = record_z(model, names)
    with model.hooked(fns):
        logprobs = model.forced_logprobs(text, out_ids)
    return kept, logprobs.sum(-1)


def _patch(
    model: LoadedModel,
    clean: str,
    corrupted: str,
    kind: AttentionKind,
    rows: list[list[tuple[int, int]]],
    progress: OnFraction | None = None,
) -> np.ndarray:
    """Fraction of the logit difference restored per row of ``rows`` (heads patched together);
    ``progress`` as ``patch_heads``'s."""
    clean, corrupted = (
        check_text(clean, "clean sentence"),
        check_text(corrupted, "corrupted sentence"),
    )
    require_output(model)
    _same_length(model, clean, corrupted)
    with ticking(model, progress) as report:
        with decoding(model, report, 0.0, 0.1):
            y_clean = model.reference_ids(clean)
        with decoding(model, report, 0.1, 0.2):
            y_corr = model.reference_ids(corrupted)
        result = _patched(model, (clean, y_clean), (corrupted, y_corr), kind, rows, report)
    if report is not None:
        report(1.0)
    return result


def _patched(
    model: LoadedModel,
    clean: tuple[str, list[int]],
    corrupted: tuple[str, list[int]],
    kind: AttentionKind,
    rows: list[list[tuple[int, int]]],
    report: OnFraction | None,
) -> np.ndarray:
    """``_patch`` once both outputs are decoded: each output's clean, corrupted and patched
    passes (the patched ones reporting from 0.2 to 0.6, then to 1)."""
    (clean, y_clean), (corrupted, y_corr) = clean, corrupted
    if y_clean == y_corr:
        raise ValueError(
            "both sentences give the same output, so there is no difference to restore; change "
            "a word of the corrupted sentence so that its output changes."
        )
    names = sorted({model.hook_name(kind, layer, "hook_z") for layer, _ in all_heads(model, kind)})
    # LD(run) = log p(y_clean | run) - log p(y_corr | run), the sequence-level logit difference
    ld_clean = ld_corr = 0.0
    ld_patched = np.zeros(len(rows))
    for i, (sign, y) in enumerate(((1.0, y_clean), (-1.0, y_corr))):
        z, clean_lp = _clean_z(model, clean, y, names)
        ld_clean += sign * float(clean_lp[0])
        ld_corr += sign * float(model.forced_logprobs(corrupted, y).sum())
        share = part(report, 0.2 + 0.4 * i, 0.6 + 0.4 * i)
        ld_patched += sign * batched_scores(model, corrupted, y, kind, rows, z, share)
    return (ld_patched - ld_corr) / (ld_clean - ld_corr)


def _same_length(model: LoadedModel, clean: str, corrupted: str) -> None:
    (a, a_tokens), (b, b_tokens) = model.source_ids(clean), model.source_ids(corrupted)
    if len(a) != len(b):
        raise ValueError(
            f"patching needs two inputs of the same token length: the clean one has {len(a)} "
            f"tokens ({' '.join(a_tokens)}), the corrupted one {len(b)} ({' '.join(b_tokens)}); "
            "change words for words that split into as many tokens."
        )


def patch_heads(
    model: LoadedModel,
    clean: str,
    corrupted: str,
    kind: AttentionKind,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> np.ndarray:
    """Activation patching: each head's clean output z put into the corrupted run alone.

    With the logit difference LD(run) = log p(y_clean | run) - log p(y_corr | run) (each output
    teacher-forced, end symbol included; y_clean and y_corr the greedy outputs of the two
    inputs), a head scores (LD(patched) - LD(corrupted)) / (LD(clean) - LD(corrupted)): 1 when
    it restores the whole difference, 0 when none (Meng et al. 2022; Wang et al. 2022; the
    TransformerLens ``patching`` module).

    ``progress`` (optional) is called with the fraction done after each greedy step and each
    batch of heads, from inside the model's layers at most every ``TICK_S`` s, and with 1 at
    the end. ``stop`` (optional): once set, the work ends at its next progress point with
    ``records.progress.Cancelled``, leaving the model clean.

    Returns:
        float64 ``[layers, heads]``.

    Raises:
        ValueError: inputs of different token lengths, or inputs with the same output.
    """
    rows = [[h] for h in all_heads(model, kind)]
    return _patch(model, clean, corrupted, kind, rows, with_stop(progress, stop)).reshape(
        model.attention_shape(kind)
    )


def patch_set(
    model: LoadedModel,
    clean: str,
    corrupted: str,
    kind: AttentionKind,
    heads: Sequence[tuple[int, int]],
) -> float:
    """The fraction restored by patching the heads ``(layer, head)`` together (see
    ``patch_heads``); every cross-attention head together restores exactly 1, because the
    decoder then sees nothing of the corrupted source."""
    checked = check_heads(model, [(kind, layer, head) for layer, head in heads])
    return float(_patch(model, clean, corrupted, kind, [[(k[1], k[2]) for k in checked]])[0])
