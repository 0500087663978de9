"""``analysis.corpus.tables``: what the "Heads across a corpus" page draws, checked against the
definitions written another way (Python loops over a small random table with NaN holes)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus import tables
from viz_transformer.analysis.corpus.stats import STATS

SHAPES = {"encoder": (3, 2), "cross": (2, 4)}  # kind -> (layers, heads)


@pytest.fixture(scope="module")
def per_sentence() -> pd.DataFrame:
    """Five sentences' rows with random statistics, some NaN, rows per sentence 1..5."""
    rng = np.random.default_rng(0)
    rows = []
    for sid in range(5):
        for kind, (n_layers, n_heads) in SHAPES.items():
            for layer in range(n_layers):
                for head in range(n_heads):
                    values = np.where(rng.random(len(STATS)) > 0.2, rng.random(len(STATS)), np.nan)
                    rows.append((sid, kind, layer, head, sid + 1, *values))
    return pd.DataFrame(rows, columns=["sentence_id", "kind", "layer", "head", "n_rows", *STATS])


def test_the_grid_holds_each_heads_row_weighted_mean_at_its_layer_and_head(per_sentence) -> None:
    summary = vt.head_summary(per_sentence)
    for kind, (n_layers, n_heads) in SHAPES.items():
        grid = tables.stat_grid(summary, kind, "entropy")
        assert grid.shape == (n_layers, n_heads)
        for layer in range(n_layers):
            for head in range(n_heads):
                num = den = 0.0
                for r in per_sentence.itertuples():
                    if (r.kind, r.layer, r.head) == (kind, layer, head) and r.entropy == r.entropy:
                        num, den = num + r.n_rows * r.entropy, den + r.n_rows
                want = num / den if den else math.nan
                assert grid[layer, head] == pytest.approx(want, nan_ok=True)


def test_kinds_come_in_the_libraries_order(per_sentence) -> None:
    assert tables.kinds_in(vt.head_summary(per_sentence)) == ["encoder", "cross"]


def test_heads_rank_highest_first_with_nan_last(per_sentence) -> None:
    summary = vt.head_summary(per_sentence)
    summary.loc[3, "entropy"] = math.nan
    ranked = tables.ranked_heads(summary, "entropy")
    values = list(ranked["entropy"])
    numbers = [v for v in values if v == v]
    assert numbers == sorted(numbers, reverse=True)
    assert all(v != v for v in values[len(numbers) :]) and len(values) == len(summary)
    assert ranked.index.tolist() == list(range(len(summary)))
