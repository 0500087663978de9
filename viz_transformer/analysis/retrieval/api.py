"""``vt.retrieval_heads``: one needle run, or a sweep over depths x lengths x haystacks (see
``run`` and ``sweep``); ``compare_forms`` says which heads two of them share."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from pathlib import Path

from viz_transformer.analysis.retrieval.needle import Form
from viz_transformer.analysis.retrieval.result import (
    FormComparison,
    RetrievalResult,
    compare_forms,
)
from viz_transformer.analysis.retrieval.run import one_run
from viz_transformer.analysis.retrieval.sweep import retrieval_sweep
from viz_transformer.analysis.retrieval.sweep_result import RetrievalSweep, RunSummary
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken

__all__ = [
    "FormComparison",
    "RetrievalResult",
    "RetrievalSweep",
    "RunSummary",
    "compare_forms",
    "retrieval_heads",
]


def retrieval_heads(
    model: LoadedModel | str,
    haystack: str | Sequence[str],
    needle: str,
    depth: float = 0.5,
    *,
    depths: Sequence[float] | None = None,
    lengths: Sequence[int | None] | None = None,
    prompt: Form = "copy",
    question: str | None = None,
    answer: str | None = None,
    only_found: bool = False,
    out: Path | str | MutableMapping | None = None,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> RetrievalResult | RetrievalSweep:
    """Which heads copy ``needle`` hidden in ``haystack`` (Wu et al. 2024's retrieval score).

    One text and neither ``depths`` nor ``lengths``: one run at ``depth``
    (``run.one_run``: ``.prompt``, ``.output``, ``.needle_positions``, ``.table``,
    ``.summary()``). A list of texts, ``depths=[...]`` or ``lengths=[...]``: one run per (text,
    length, depth) (``sweep.retrieval_sweep``): ``.table`` each head's mean and spread,
    ``.scores()`` each (depth, length) cell's, ``.cell(depth, length)`` its runs; finished runs
    kept in ``out`` (a folder or a dict) so a stopped sweep resumes.

    Args:
        model: a decoder-only model or its name (``"smollm2"``, ``"hf:<causal LM>"``).
        lengths: prompt lengths in tokens (each text cut at a sentence boundary to fit).
        prompt: ``"copy"`` (default: the prompt ends with the needle's first half, so the
            model copies the rest: induction) or ``"question"`` (Wu et al.'s: it ends by asking
            ``question``, whose answer is the needle's tail, ``answer`` or the needle from its
            first word the question lacks).
        only_found: a sweep's means count only the runs whose output's ROUGE-1 recall of the
            answer is above 0.5 (Wu et al.'s choice); default every run.
        out: where a sweep keeps its runs (a single run keeps nothing: refused).
        progress: called with the fraction done; stop: once set, the job ends (``Cancelled``).

    Raises:
        ValueError: bad input (empty needle, needle longer than the text, text past the
            model's context, a model that is not decoder-only, the question form without a
            question, ``out`` or ``only_found`` for a single run), named in the message.
    """
    if isinstance(model, str):
        from viz_transformer.models.registry import load_model

        model = load_model(model)
    how = {"prompt": prompt, "question": question, "answer": answer}
    if isinstance(haystack, str) and depths is None and lengths is None:
        for name, given in (("out", out is not None), ("only_found", only_found)):
            if given:
                raise ValueError(
                    f"{name}= belongs to a sweep, and this is a single run (one text, no depths "
                    f"or lengths): pass depths=[{depth}] to run it as a sweep of one, or drop "
                    f"{name}=."
                )
        return one_run(model, haystack, needle, depth, progress, stop, **how)
    texts = [haystack] if isinstance(haystack, str) else list(haystack)
    where = [depth] if depths is None else list(depths)
    return retrieval_sweep(
        model,
        texts,
        needle,
        where,
        out,
        progress,
        stop,
        lengths=lengths,
        only_found=only_found,
        **how,
    )
