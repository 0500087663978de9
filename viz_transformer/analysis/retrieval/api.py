"""``vt.retrieval_heads``: one needle run, or a sweep over depths and haystacks (see ``run`` and
``sweep``)."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from pathlib import Path

from viz_transformer.analysis.retrieval.run import RetrievalResult
from viz_transformer.analysis.retrieval.run import retrieval_heads as one_run
from viz_transformer.analysis.retrieval.sweep import RetrievalSweep, retrieval_sweep
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken

__all__ = ["RetrievalResult", "RetrievalSweep", "retrieval_heads"]


def retrieval_heads(
    model: LoadedModel | str,
    haystack: str | Sequence[str],
    needle: str,
    depth: float = 0.5,
    *,
    depths: Sequence[float] | None = None,
    out: Path | str | MutableMapping | None = None,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> RetrievalResult | RetrievalSweep:
    """Which heads copy ``needle`` hidden in ``haystack`` (Wu et al. 2024's retrieval score).

    One text and no ``depths``: one run at ``depth`` (``run.retrieval_heads``: ``.prompt``,
    ``.output``, ``.prompt_tokens``, ``.output_tokens``, ``.needle_positions``, ``.table``).
    A list of texts or ``depths=[...]``: one run per (text, depth), each head's mean and spread in
    ``.table`` (``sweep.retrieval_sweep``), finished runs kept in ``out`` (a folder or a dict) so
    a stopped sweep resumes.

    Args:
        model: a decoder-only model or its name (``"smollm2"``, ``"hf:<causal LM>"``).
        progress: called with the fraction done; stop: once set, the job ends (``Cancelled``).

    Raises:
        ValueError: bad input (empty needle, needle longer than the text, text past the
            model's context, a model that is not decoder-only), named in the message.
    """
    if isinstance(model, str):
        from viz_transformer.models.registry import load_model

        model = load_model(model)
    if isinstance(haystack, str) and depths is None:
        return one_run(model, haystack, needle, depth, progress, stop)
    texts = [haystack] if isinstance(haystack, str) else list(haystack)
    where = [depth] if depths is None else list(depths)
    return retrieval_sweep(model, texts, needle, where, out, progress, stop)
