"""The browser gets at most what it draws (issue 53): a long head's score map as block maxima,
a long decoder row as block maxima, the walkthrough's steps over the keys the query weighs most;
each figure under 1 MB at 3,000 tokens, its cells equal to the full numbers' reductions."""

from __future__ import annotations

import numpy as np

from viz_transformer.analysis.decoding import Step
from viz_transformer.analysis.walkthrough import Walkthrough
from viz_transformer.figures import decoder, positional, qkv, why
from viz_transformer.figures.attention import HEAD_MAX
from viz_transformer.figures.heatmap import heatmap
from viz_transformer.records.tiles import block_reduce

N = 3000
MB = 2**20


def _causal_scores(n: int, seed: int = 0) -> np.ndarray:
    scores = np.random.default_rng(seed).standard_normal((n, n), np.float32)
    scores[np.triu_indices(n, 1)] = -np.inf
    return scores


def test_a_long_score_map_is_sent_as_block_maxima_under_a_megabyte() -> None:
    scores = _causal_scores(1300)  # drawn the same at any length: at most HEAD_MAX a side
    tokens = tuple(f"w{i}" for i in range(1300))
    fig = why.score_map(scores, tokens, tokens, "L0 H0", (1000, 10))
    assert len(fig.to_json()) < MB
    z = np.asarray(fig.data[0].z, dtype=float)
    want, bq, bk = block_reduce(scores, HEAD_MAX, "max")
    assert max(z.shape) <= HEAD_MAX and z.shape == want.shape and (bq, bk) == (6, 6)
    finite = np.isfinite(want)
    np.testing.assert_allclose(z[finite], want[finite], rtol=1e-6)
    assert np.isnan(z[~finite]).all() and np.isnan(z[0, -1])  # a block wholly in the future
    (outline,) = fig.layout.shapes  # the picked cell's block
    assert (outline.y0, outline.x0) == (996 - 0.5, 6 - 0.5) and outline.x1 - outline.x0 == bk


def test_a_short_score_map_keeps_every_cell_and_token_label() -> None:
    scores = _causal_scores(40)
    tokens = tuple(f"w{i}" for i in range(40))
    fig = why.score_map(scores, tokens, tokens, "L0 H0")
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (40, 40) and fig.layout.xaxis.ticktext[3] == "w3"


def test_a_long_decoder_row_is_sent_as_block_maxima_under_a_megabyte() -> None:
    rows = np.random.default_rng(1).random((30, 9, N)).astype(np.float32)
    tokens = tuple(f"w{i}" for i in range(N))
    step = Step(5, tokens, rows, None, ("a",), np.array([1.0]), "a", 1.0, ())
    fig = decoder.self_rows_figure(step, N + 40, layer=29)
    assert len(fig.to_json()) < MB
    z = np.asarray(fig.data[0].z, dtype=float)
    size = -(-(N + 40) // decoder.KEYS_MAX)
    assert z.shape == (9, -(-(N + 40) // size)) and z.shape[1] <= decoder.KEYS_MAX
    np.testing.assert_allclose(z[4, 0], rows[29, 4, :size].max(), rtol=1e-6)
    assert np.isnan(z[0, -1])  # a block of future positions only


def _walkthrough(n: int, d_k: int = 64) -> Walkthrough:
    rng = np.random.default_rng(2)
    raw = rng.normal(size=n)
    weights = np.exp(raw) / np.exp(raw).sum()
    v = rng.normal(size=(n, d_k))
    tokens = tuple(f"w{i}" for i in range(n))
    x, k = rng.normal(size=576), rng.normal(size=(n, d_k))
    return Walkthrough(
        "m",
        "decoder",
        0,
        0,
        n - 1,
        tokens,
        tokens,
        d_k,
        9,
        True,
        x,
        None,
        None,
        rng.normal(size=d_k),
        k,
        v,
        raw,
        raw / 8,
        np.ones(n, bool),
        weights,
        weights @ v,
        rng.normal(size=9 * d_k),
        rng.normal(size=576),
    )


def test_the_walkthrough_steps_draw_the_keys_the_query_weighs_most() -> None:
    w = _walkthrough(N)
    kept = qkv.shown_keys(w)
    assert len(kept) == qkv.KEYS_MAX and (np.diff(kept) > 0).all()
    assert w.weights[kept].min() >= np.sort(w.weights)[-qkv.KEYS_MAX]  # the largest ones
    for figure in (qkv.vectors_figure, qkv.scores_table, qkv.weighted_sum_figure):
        fig = figure(w)
        assert len(fig.to_json()) < MB and f"64 of {N:,} keys" in fig.layout.title.text
    sums = qkv.weighted_sum_figure(w)
    np.testing.assert_allclose(np.asarray(sums.data[1].z)[0], w.z)  # z sums every key
    table = qkv.scores_table(w)
    assert list(table.data[0].cells.values[0]) == [int(j) for j in kept]
    short = _walkthrough(20)
    assert (
        len(qkv.shown_keys(short)) == 20
        and "keys" not in qkv.vectors_figure(short).layout.title.text
    )


def test_a_map_of_256_tokens_names_its_tokens_on_the_axes_not_in_every_cell() -> None:
    tokens = [f"token{i}" for i in range(256)]
    z = np.random.default_rng(3).random((256, 256)).astype(np.float32)
    fig = heatmap(z, tokens, tokens, "L0 H0", "query")
    assert len(fig.to_json()) < MB / 2 and fig.data[0].text is None
    assert "token4" in fig.layout.xaxis.ticktext and "query %{y}" in fig.data[0].hovertemplate
    small = heatmap(z[:20, :20], tokens[:20], tokens[:20], "L0 H0", "query")
    assert small.data[0].text[2][3] == "token2 → token3"


def test_a_large_position_table_is_sent_as_block_means() -> None:
    table = np.random.default_rng(4).standard_normal((1000, 1024), np.float32)
    fig = positional.table_figure(table, "PE")
    assert len(fig.to_json()) < MB
    z = np.asarray(fig.data[0].z, dtype=float)
    assert z.shape == (250, 256) and (fig.data[0].dy, fig.data[0].dx) == (4, 4)
    np.testing.assert_allclose(z[3, 5], table[12:16, 20:24].mean(), rtol=1e-5)
    small = positional.table_figure(table[:100, :128], "PE")
    np.testing.assert_array_equal(np.asarray(small.data[0].z), table[:100, :128])
