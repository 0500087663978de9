"""Figures of long maps: block maxima placed at their positions, causal blocks blank, zoom windows
at full resolution; the overview tiles non-square (cross-attention) heads where its hover says."""

from __future__ import annotations

import re

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.figures import attention
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Trace
from viz_transformer.testing.paper import tiny_paper_model

N = 20


@pytest.fixture
def trace(monkeypatch) -> Trace:
    monkeypatch.setattr(attention, "HEAD_MAX", 8)
    monkeypatch.setattr(attention, "OVERVIEW_MAX", 8)
    rng = np.random.default_rng(1)
    q = [rng.normal(size=(2, N, 4)).astype(np.float32) for _ in range(2)]
    k = [rng.normal(size=(2, N, 4)).astype(np.float32) for _ in range(2)]
    tokens = ("<s>", *(f"w{i}" for i in range(N - 1)))
    return Trace("m", (), tokens, tokens, None, LazyPatterns(q, k, causal=True), None).validate()


def test_a_long_causal_map_shows_block_maxima_and_blank_future_blocks(trace):
    fig = attention.head_figure(trace, "decoder", 1, 1)
    z = np.asarray(fig.data[0].z, dtype=float)
    full = trace.decoder[1, 1]
    assert z.shape == (7, 7)  # ceil(20 / 3) blocks of 3
    for i in range(7):
        for j in range(7):
            block = full[3 * i : 3 * i + 3, 3 * j : 3 * j + 3]
            if 3 * j > min(3 * i + 2, N - 1):  # every key of the block is in every row's future
                assert np.isnan(z[i, j])
            else:
                assert z[i, j] == pytest.approx(block.max())
    assert "max of a 3 x 3 block" in fig.layout.title.text


def test_a_window_is_full_resolution_with_the_causal_triangle(trace):
    fig = attention.head_figure(trace, "decoder", 0, 1, window=(4, 2, 6))
    z = np.asarray(fig.data[0].z, dtype=float)
    full = trace.decoder[0, 1]
    rows, cols = np.arange(4, 10)[:, None], np.arange(2, 8)[None, :]
    np.testing.assert_allclose(z[cols <= rows], full[4:10, 2:8][cols <= rows], atol=1e-7)
    assert np.isnan(z[cols > rows]).all()
    assert list(fig.layout.xaxis.ticktext) == [f"w{i}" for i in range(1, 7)]


def test_a_window_may_be_larger_than_the_drawn_map_up_to_window_max(trace, monkeypatch):
    """Issue 46: the overview and the head map are block maxima; a window up to ``WINDOW_MAX``
    (1,024 in the app) a side is drawn at full resolution, larger asks are cut to it."""
    monkeypatch.setattr(attention, "WINDOW_MAX", 12)  # HEAD_MAX is 8 here
    z = np.asarray(attention.head_figure(trace, "decoder", 1, 0, window=(8, 0, 16)).data[0].z)
    assert z.shape == (12, 12)
    full = trace.decoder[1, 0][8:20, :12]
    np.testing.assert_allclose(z.astype(float)[full > 0], full[full > 0], atol=1e-7)


def test_the_overview_tiles_every_head_reduced(trace):
    fig = attention.overview_figure(trace, "decoder")
    tiled = np.asarray(fig.data[0].z, dtype=float)
    gap = max(1, round(0.15 * 7))
    assert tiled.shape == (2 * 7 + gap, 2 * 7 + gap)
    first = attention.head_figure(trace, "decoder", 0, 0).data[0].z
    np.testing.assert_array_equal(tiled[:7, :7], np.asarray(first, dtype=float))


def test_each_block_sits_at_the_centre_of_the_positions_it_holds(trace):
    heat = attention.head_figure(trace, "decoder", 1, 1).data[0]
    for j in range(6):  # the full blocks of 3 (the seventh holds positions 18 and 19)
        centre = np.mean([3 * j, 3 * j + 1, 3 * j + 2])
        assert heat.x0 + j * heat.dx == pytest.approx(centre)
        assert heat.y0 + j * heat.dy == pytest.approx(centre)


def test_the_overview_of_cross_attention_tiles_each_head_where_its_hover_says():
    model = tiny_paper_model(0, max_len=10, n_encoder_layers=1, n_heads=4, d_model=16)
    tr = vt.trace(model, "alpha beta")
    fig = attention.overview_figure(tr, "cross")
    cross = np.asarray(tr.cross)
    n_layers, n_heads, q, k = cross.shape
    assert q != k  # 10 output rows, 3 source keys
    tiled, where = np.asarray(fig.data[0].z, dtype=float), np.asarray(fig.data[0].customdata)
    gap = max(1, round(0.15 * max(q, k)))
    assert tiled.shape == (n_layers * (q + gap) - gap, n_heads * (k + gap) - gap)
    for layer, head in np.ndindex(n_layers, n_heads):
        r, c = layer * (q + gap), head * (k + gap)  # a tile of q rows by k columns
        np.testing.assert_allclose(tiled[r : r + q, c : c + k], cross[layer, head], atol=1e-6)
        assert (where[r : r + q, c : c + k] == (layer, head)).all()


def test_the_overview_of_a_long_input_names_each_block_by_its_first_and_last_token(trace):
    fig = attention.overview_figure(trace, "decoder")
    blocks = {"<s> … w1", *(f"w{i} … w{i + 2}" for i in range(2, 17, 3)), "w17 … w18"}
    quoted = re.findall(r"‘([^’]*)’", fig.layout.meta["description"])
    assert quoted and set(quoted) <= blocks
    table = fig.layout.meta["values"]
    assert len(table["rows"]) == 4 and {row[3] for row in table["rows"]} <= blocks
