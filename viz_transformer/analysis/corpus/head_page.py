"""One head over a corpus (a head page, after HeadVis): sentences sampled across its activation
levels, and one pass over a sample of sentences for what it attends to in general.

Definitions, for the head's pattern ``P`` ``[q, k]`` of each sampled sentence as ``vt.trace`` of
that sentence records it, with ``q_tok``/``k_tok`` the tokens labelling its rows and columns
(``Trace.tokens_for``: the token each query row reads):

- a **token pair** (a, b) weighs ``sum P[i, j]`` over every row i whose token is a and key j whose
  token is b, over all sampled sentences; its ``share`` is that weight over the number of rows
  (so the shares of all pairs sum to 1);
- the **distance** histogram puts ``P[i, j]`` at offset ``i - j`` (0: the same position, 1: the
  previous one, negative: a later key), divided by the number of rows (it sums to 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.corpus.stats import STATS
from viz_transformer.analysis.corpus.tables import head_rows
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.progress import OnCount, StopToken, with_stop
from viz_transformer.records.trace import Trace

LEVELS = ("strongest", "middle", "weakest")
SAMPLE = 32  # sentences traced for a head page (bench/bench_corpus_head.py times it)


def examples_by_level(
    rows: pd.DataFrame, kind: AttentionKind, layer: int, head: int, stat: str, per_level: int = 3
) -> pd.DataFrame:
    """Sentences of one head sampled across its levels of ``stat``, not only the top: the
    ``per_level`` highest, the ``per_level`` around the median and the ``per_level`` lowest
    (each sentence once; fewer when the corpus is small; ties: the lower ``sentence_id`` first).

    Args:
        rows: the per-sentence table of ``vt.corpus_stats``.

    Returns:
        columns ``level``, ``sentence_id``, ``value``, the levels in ``LEVELS`` order, each level's
        sentences from its highest value down.
    """
    if stat not in STATS:
        raise ValueError(f"Unknown statistic {stat!r}: use one of {', '.join(STATS)}.")
    ranked = (
        head_rows(rows, kind, layer, head)
        .dropna(subset=[stat])
        .sort_values([stat, "sentence_id"], ascending=[False, True])
    )
    n = len(ranked)
    mid = max(0, min(n - per_level, (n - per_level) // 2))
    picks = {
        "strongest": range(min(per_level, n)),
        "middle": range(mid, min(mid + per_level, n)),
        "weakest": range(max(0, n - per_level), n),
    }
    taken: set[int] = set()
    out = []
    for level in LEVELS:
        for i in picks[level]:
            if i not in taken:
                taken.add(i)
                out.append((level, int(ranked["sentence_id"].iat[i]), float(ranked[stat].iat[i])))
    return pd.DataFrame(out, columns=["level", "sentence_id", "value"])


@dataclass(frozen=True)
class HeadPass:
    """What one pass over sampled sentences finds for one head.

    Attributes:
        pairs: columns ``query``, ``key``, ``weight``, ``share``; every pair, largest first.
        offsets: ``(n,)`` query-key distances ``i - j`` with any weight, in increasing order
            (a causal head has none below 0).
        mass: ``(n,)`` the share of attention at each offset (sums to 1).
        sentences: how many sentences were traced; rows: their query rows together.
    """

    pairs: pd.DataFrame
    offsets: np.ndarray
    mass: np.ndarray
    sentences: int
    rows: int


def sample_ids(n_sentences: int, sample: int = SAMPLE) -> list[int]:
    """``sample`` sentence indices spread evenly over a corpus (all when it is small)."""
    if n_sentences <= sample:
        return list(range(n_sentences))
    return sorted({int(i) for i in np.linspace(0, n_sentences - 1, sample).round()})


def sample_traces(
    model: LoadedModel,
    sentences: Sequence[str],
    on_sentence: OnCount | None = None,
    stop: StopToken | None = None,
) -> list[Trace]:
    """``vt.trace`` of each sampled sentence: the one pass every head's page reads (a head's
    pairs and distances are then pure functions of these traces, instant for any head).

    Args:
        sentences: the sample (``sample_ids`` picks one from a corpus).
        on_sentence: called with (sentences done, total) after each, for a progress bar.
        stop: once set, the work ends after the sentence in progress with
            ``records.progress.Cancelled``.
    """
    traces, on_sentence = [], with_stop(on_sentence, stop)
    for done, text in enumerate(sentences, start=1):
        traces.append(trace(model, text))
        if on_sentence is not None:
            on_sentence(done, len(sentences))
    return traces


def head_pass(traces: Sequence[Trace], kind: AttentionKind, layer: int, head: int) -> HeadPass:
    """Pool one head's token pairs and query-key distances over the sampled traces."""
    weights: dict[tuple[str, str], float] = {}
    by_offset: dict[int, float] = {}
    rows = 0
    for tr in traces:
        patterns = tr.get(kind)
        if patterns is None:
            raise ValueError(f"{tr.model_name} has no {kind} attention to take apart.")
        P = np.asarray(patterns[layer][head], dtype=np.float64)  # [q, k]
        q_tok, k_tok = tr.tokens_for(kind)
        for i, a in enumerate(q_tok):
            for j, b in enumerate(k_tok):
                weights[(a, b)] = weights.get((a, b), 0.0) + P[i, j]
        i, j = np.indices(P.shape)
        for off, w in zip(*_sum_by(i - j, P), strict=True):
            by_offset[off] = by_offset.get(off, 0.0) + w
        rows += P.shape[0]
    pairs = pd.DataFrame(
        [(a, b, w) for (a, b), w in weights.items()], columns=["query", "key", "weight"]
    )
    pairs["share"] = pairs["weight"] / max(rows, 1)
    pairs = pairs.sort_values(["weight", "query", "key"], ascending=[False, True, True])
    offsets = np.array(sorted(o for o, w in by_offset.items() if w > 0), dtype=np.int64)
    mass = np.array([by_offset[o] for o in offsets], dtype=np.float64) / max(rows, 1)
    return HeadPass(pairs.reset_index(drop=True), offsets, mass, len(traces), rows)


def _sum_by(keys: np.ndarray, values: np.ndarray) -> tuple[list[int], list[float]]:
    """Sum ``values`` by integer ``keys`` (same shape)."""
    uniq, inverse = np.unique(keys.ravel(), return_inverse=True)
    sums = np.bincount(inverse, weights=values.ravel(), minlength=len(uniq))
    return [int(u) for u in uniq], [float(s) for s in sums]


def heads_beside(summary: pd.DataFrame, kind: AttentionKind, layer: int, head: int) -> pd.DataFrame:
    """Every head's five statistics (the corpus summary) with the chosen one marked ``picked``.

    Args:
        summary: ``vt.head_summary`` of the corpus table (one row per kind, layer, head).
    """
    picked = (summary["kind"] == kind) & (summary["layer"] == layer) & (summary["head"] == head)
    if not picked.any():
        raise ValueError(f"No statistics for {kind} layer {layer} head {head} in this corpus.")
    return summary.assign(picked=picked.to_numpy())
