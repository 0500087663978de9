"""What the "Heads across a corpus" page draws, computed from the statistics table: a layers x
heads grid of one statistic per kind, the heads ranked by it, and one head's sentences.

Pure functions of the tables of ``vt.corpus_stats`` (one row per sentence x kind x layer x head)
and ``vt.head_summary`` (one row per kind x layer x head); the page only draws what they return.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz_transformer.records.kinds import KINDS, AttentionKind


def kinds_in(summary: pd.DataFrame) -> list[AttentionKind]:
    """The kinds the table holds, in the order of ``vt.KINDS``."""
    present = set(summary["kind"])
    return [k for k in KINDS if k in present]


def stat_grid(summary: pd.DataFrame, kind: AttentionKind, stat: str) -> np.ndarray:
    """``[layers, heads]`` float64: ``stat`` of every head of ``kind`` (NaN where the summary
    has no value), the grid the page draws per kind.

    Args:
        summary: ``vt.head_summary``'s table; kind: one of its kinds; stat: one of its columns.
    """
    part = summary[summary["kind"] == kind]
    layers, heads = part["layer"].to_numpy(np.int64), part["head"].to_numpy(np.int64)
    grid = np.full((int(layers.max()) + 1, int(heads.max()) + 1), np.nan)
    grid[layers, heads] = part[stat].to_numpy(np.float64)
    return grid


def ranked_heads(summary: pd.DataFrame, stat: str) -> pd.DataFrame:
    """The summary's rows sorted by ``stat``, highest first, NaN last (ties keep the summary's
    order), index reset: row 0 is the head the page picks first."""
    ranked = summary.sort_values(stat, ascending=False, na_position="last", kind="stable")
    return ranked.reset_index(drop=True)


def head_rows(df: pd.DataFrame, kind: AttentionKind, layer: int, head: int) -> pd.DataFrame:
    """One head's rows of the per-sentence table (one per sentence computed)."""
    return df[(df["kind"] == kind) & (df["layer"] == layer) & (df["head"] == head)]
