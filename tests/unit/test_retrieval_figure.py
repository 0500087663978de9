"""The depth x length picture of retrieval heads (figures/retrieval.py) from known arrays: which
heads it draws, in what order, each cell's value, the missed runs' marks and the cells' links."""

from __future__ import annotations

import numpy as np

from viz_transformer.figures.retrieval import depth_length_figure, ranked_heads


def _scores() -> np.ndarray:
    """[3 depths, 2 lengths, 2 layers, 3 heads]: every value distinct, below the threshold but
    for the heads set below."""
    rng = np.random.default_rng(0)
    s = rng.uniform(0.0, 0.09, size=(3, 2, 2, 3)).astype(np.float32)
    s[:, :, 1, 2] = [[0.9, 0.8], [0.7, 0.6], [0.5, 0.4]]  # L1 H2: every run
    s[:2, :, 0, 1] = [[0.3, 0.2], [0.15, 0.12]]  # L0 H1: 4 of 6 runs
    s[0, 0, 1, 0] = 0.95  # L1 H0: 1 run, the highest single score
    return s


def test_heads_rank_by_the_runs_they_retrieve_in() -> None:
    ranked = ranked_heads(_scores())
    assert ranked[:3] == [(1, 2, 6), (0, 1, 4), (1, 0, 1)]
    assert [n for *_, n in ranked[3:]] == [0, 0, 0]


def test_each_cell_is_that_runs_score_of_the_head() -> None:
    s = _scores()
    found = np.array([[True, True], [True, False], [True, True]])
    fig = depth_length_figure(
        s, [0.1, 0.5, 0.9], [256, 0], found, lambda i, j, la, h: f"u?{i}{j}{la}{h}", top=3
    )
    assert [t.name for t in fig.data] == ["L1 H2", "L0 H1", "L1 H0"]
    for trace, (layer, head) in zip(fig.data, [(1, 2), (0, 1), (1, 0)], strict=True):
        np.testing.assert_array_equal(np.asarray(trace.z), s[:, :, layer, head])
    assert [a.text for a in fig.layout.annotations][:3] == [
        "L1 H2: 6 of 6 runs",
        "L0 H1: 4 of 6 runs",
        "L1 H0: 1 of 6 runs",
    ]
    cells = [a.text for a in fig.layout.annotations[3:]]
    assert len(cells) == 18  # 3 heads x 6 runs, each a link
    assert cells[0] == '<a href="u?0012" target="_blank">0.90</a>'
    assert cells[3] == '<a href="u?1112" target="_blank">0.60 ✗</a>'  # the run that missed
    assert list(fig.layout.xaxis.ticktext) == ["256", "whole text"]
    assert list(fig.layout.yaxis.ticktext) == ["0.1", "0.5", "0.9"]


def test_a_run_not_made_is_an_empty_cell() -> None:
    s = _scores()
    s[2, 1] = np.nan  # stopped before the last run
    fig = depth_length_figure(s, [0.1, 0.5, 0.9], [256, 0], top=1)
    assert np.isnan(np.asarray(fig.data[0].z, dtype=float)[2, 1])
    assert len(fig.layout.annotations) == 1 + 5  # its title, five numbers
    assert "5 runs" in fig.layout.annotations[0].text
