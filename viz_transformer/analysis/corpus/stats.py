"""What a head does across a corpus: per-sentence statistics of its pattern, and their summary.

Pure functions of arrays: a batch's padded patterns in, one row per sentence x kind x layer x head
out. The definitions (pinned; ``docs/corpus.md`` repeats them), for the pattern ``P`` ``[q, k]``
of one sentence, kind, layer and head as ``vt.trace`` of that sentence alone records it:

- ``n_rows`` = q, the query rows;
- ``entropy`` = mean over rows of -sum_j P log P (natural log, 0 log 0 = 0);
- ``max_weight`` = mean over rows of the row's largest weight;
- ``first_token`` = mean over rows of ``P[q, 0]`` (weight on the first key: a sink);
- ``prev_token`` = mean over rows q >= 1 with q - 1 < k of ``P[q, q - 1]``;
- ``diagonal`` = mean over rows q < k of ``P[q, q]``;

NaN where no row qualifies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz_transformer.records.batch import PatternBatch

STATS = ("entropy", "max_weight", "first_token", "prev_token", "diagonal")
COLUMNS = ("sentence_id", "kind", "layer", "head", "n_rows", *STATS)
KEY = ["sentence_id", "kind", "layer", "head"]
CHUNK_SENTENCES = 8  # sentences whose statistics are computed together (bounds temporaries)


def _masked_mean(values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over the last axis where ``ok``; NaN where nothing is ``ok``."""
    count = ok.sum(-1)
    total = np.where(ok, values, 0.0).sum(-1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _layer_stats(P: np.ndarray, q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``pattern_stats`` of one layer: ``P`` ``[B, heads, Q, K]`` -> ``[B, heads, 5]``."""
    _, _, Q, K = P.shape
    P = np.where((np.arange(K)[None, :] < k)[:, None, None, :], P, np.float32(0))
    row_ok = (np.arange(Q)[None, :] < q)[:, None, :]  # (B, 1, Q)
    # float32 per weight, float64 sums: a degenerate 255-token output keeps memory bounded
    plogp = P * np.log(np.where(P > 0, P, np.float32(1)))  # 0 log 0 = 0
    entropy = _masked_mean(-plogp.sum(-1, dtype=np.float64), row_ok)
    max_weight = _masked_mean(P.max(-1), row_ok)
    first = _masked_mean(P[..., 0], row_ok)
    # P[i + 1, i] for i < min(Q - 1, K): row q = i + 1 qualifies when q < q_len and i < k_len
    sub = np.diagonal(P, offset=-1, axis1=-2, axis2=-1)
    i = np.arange(sub.shape[-1])[None, :]
    prev = _masked_mean(sub, ((i + 1 < q) & (i < k))[:, None, :])
    diag = np.diagonal(P, axis1=-2, axis2=-1)  # P[i, i] for i < min(Q, K)
    i = np.arange(diag.shape[-1])[None, :]
    diagonal = _masked_mean(diag, ((i < q) & (i < k))[:, None, :])
    return np.stack([entropy, max_weight, first, prev, diagonal], axis=-1)


def pattern_stats(patterns: np.ndarray, q_lens: np.ndarray, k_lens: np.ndarray) -> np.ndarray:
    """The five statistics of every sentence and head of one kind.

    Args:
        patterns: ``[layers, B, heads, q, k]`` padded patterns; entries past a sentence's own
            ``q_lens[b]`` rows and ``k_lens[b]`` keys are ignored, whatever they hold.
        q_lens, k_lens: ``(B,)`` each sentence's query rows and keys.

    Returns:
        ``[B, layers, heads, 5]`` float64 in the order of ``STATS``.
    """
    q, k = np.asarray(q_lens)[:, None], np.asarray(k_lens)[:, None]
    L, B, H = patterns.shape[:3]
    out = np.empty((B, L, H, len(STATS)))
    for start in range(0, B, CHUNK_SENTENCES):  # each few sentences cropped to their own longest
        part = slice(start, start + CHUNK_SENTENCES)
        qm, km = int(q[part].max()), int(k[part].max())
        for layer in range(L):
            P = np.asarray(patterns[layer, part, :, :qm, :km], dtype=np.float32)
            out[part, layer] = _layer_stats(P, q[part], k[part])
    return out


def batch_rows(batch: PatternBatch, sentence_ids: np.ndarray) -> pd.DataFrame:
    """One row per sentence x kind x layer x head of ``batch`` (columns ``COLUMNS``).

    Args:
        batch: the patterns of the sentences ``sentence_ids`` (same order).
        sentence_ids: ``(B,)`` their index in the corpus.
    """
    frames = []
    ids = np.asarray(sentence_ids, dtype=np.int64)
    for kind, patterns in batch.patterns.items():
        stats = pattern_stats(patterns, batch.q_lens[kind], batch.k_lens[kind])
        B, L, H, _ = stats.shape
        cols: dict[str, object] = {
            "sentence_id": np.repeat(ids, L * H),
            "kind": kind,
            "layer": np.tile(np.repeat(np.arange(L, dtype=np.int16), H), B),
            "head": np.tile(np.arange(H, dtype=np.int16), B * L),
            "n_rows": np.repeat(np.asarray(batch.q_lens[kind], dtype=np.int32), L * H),
        }
        flat = stats.reshape(B * L * H, len(STATS)).astype(np.float32)
        cols.update({name: flat[:, j] for j, name in enumerate(STATS)})
        frames.append(pd.DataFrame(cols))
    return sort_rows(pd.concat(frames, ignore_index=True)) if frames else empty_rows()


_DTYPES = ("int64", "str", "int16", "int16", "int32", *("float32",) * len(STATS))


def empty_rows() -> pd.DataFrame:
    """The table with no row, with the columns' types."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(COLUMNS, _DTYPES, strict=True)})


def sort_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by (sentence_id, kind, layer, head), index reset."""
    return df.sort_values(KEY, kind="stable").reset_index(drop=True)


def head_summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (kind, layer, head): each statistic's mean over sentences weighted by
    ``n_rows`` (sentences where it is NaN left out), and ``n_rows`` summed.

    Args:
        df: the table of ``vt.corpus_stats`` (or ``vt.read_corpus_stats``).

    Returns:
        Columns ``kind, layer, head, n_rows, entropy, ..., diagonal`` (float64 means).
    """
    groups = ["kind", "layer", "head"]
    w = df["n_rows"].astype(np.float64)
    parts = {"n_rows": df["n_rows"].astype(np.int64)}
    for name in STATS:
        v = df[name].astype(np.float64)
        ok = v.notna()
        parts[f"{name}__num"] = (v.fillna(0.0) * w).where(ok, 0.0)
        parts[f"{name}__den"] = w.where(ok, 0.0)
    sums = pd.DataFrame(parts).assign(**{g: df[g] for g in groups}).groupby(groups).sum()
    out = sums[["n_rows"]].copy()
    for name in STATS:
        den = sums[f"{name}__den"]
        out[name] = (sums[f"{name}__num"] / den).where(den > 0)
    return out.reset_index()
