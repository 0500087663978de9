"""Positional-encoding analysis: Marian's table, the shift rotation, offsets, and model inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from viz_transformer.analysis import positional as pa
from viz_transformer.networks.marian import marian_positions
from viz_transformer.networks.positional import sinusoidal_table


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_the_table_is_section_3_5s_formula_entry_by_entry(layout):
    d, table = 6, sinusoidal_table(40, 6, layout)
    for pos in range(40):
        for i in range(d // 2):  # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos
            angle = pos / 10000 ** (2 * i / d)
            sin_col, cos_col = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
            assert table[pos, sin_col] == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, cos_col] == pytest.approx(math.cos(angle), abs=1e-6)


def test_marian_table_uses_its_own_frequencies_in_split_layout():
    d = 16
    t = marian_positions(0, 50, d, torch.device("cpu")).numpy()
    inv = np.exp(-np.arange(d // 2) * math.log(10000.0) / (d // 2 - 1))
    angles = np.arange(50)[:, None] * inv
    np.testing.assert_allclose(t, np.concatenate([np.sin(angles), np.cos(angles)], 1), atol=2e-5)
    assert inv[-1] == pytest.approx(1e-4)  # the paper's slowest is 10000^(-14/16) instead
    assert not np.allclose(t, sinusoidal_table(50, d, "split"), atol=1e-3)


@pytest.mark.parametrize("layout", ["interleaved", "split"])
@pytest.mark.parametrize("k", [1, 5, 37])
def test_shift_matrix_is_a_rotation_that_moves_every_position_by_k(layout, k):
    d = 32
    table = sinusoidal_table(200, d, layout).astype(np.float64)
    m = pa.shift_matrix(d, k, layout)
    np.testing.assert_allclose(table[k:], table[:-k] @ m.T, atol=1e-5)
    np.testing.assert_allclose(m @ m.T, np.eye(d), atol=1e-12)


def test_dot_product_depends_only_on_the_offset():
    d, table = 64, sinusoidal_table(300, 64)
    starts = [0, 50, 120]
    dots = pa.offset_dots(table, starts, 100)
    assert dots.shape == (3, 101)
    inv = 10000.0 ** (-np.arange(0, d, 2) / d)
    expected = np.cos(np.arange(101)[:, None] * inv).sum(1)  # sum_i cos(k w_i)
    for row in dots:
        np.testing.assert_allclose(row, expected, atol=1e-3)
    sim = pa.similarity(table)
    np.testing.assert_allclose(np.diag(sim), d / 2, rtol=1e-5)
    np.testing.assert_allclose(np.diagonal(sim, 7), expected[7], atol=1e-3)  # Toeplitz
    rand = np.random.default_rng(0).standard_normal((300, d))
    learned = pa.offset_dots(rand, starts, 100)
    assert not np.allclose(learned[0], learned[1], atol=1.0)
    with pytest.raises(ValueError, match="passes the table"):
        pa.offset_dots(table, starts, 200)


def test_cosine_similarity_has_unit_diagonal():
    rand = np.random.default_rng(1).standard_normal((20, 8))
    cos = pa.similarity(rand, cosine=True)
    np.testing.assert_allclose(np.diag(cos), 1.0, atol=1e-6)
    assert np.abs(cos).max() <= 1.0 + 1e-6


def test_wavelengths_run_from_2pi_to_about_10000_2pi():
    d = 512
    assert pa.wavelength(0, d) == pytest.approx(2 * math.pi)
    assert pa.wavelength(1, d) == pa.wavelength(0, d)  # sin and cos of one frequency
    assert pa.wavelength(d - 1, d) == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d))
    assert pa.wavelength(3, d, "split") == pa.wavelength(3 + d // 2, d, "split")


def test_paper_inputs_are_sqrt_d_times_the_embedding_plus_the_sinusoid(tiny):
    parts = pa.input_vectors(tiny)
    weight = tiny.module.src_embed.weight.detach().cpu().numpy()
    assert parts.scale == 4.0  # sqrt(16)
    np.testing.assert_allclose(parts.token_norms, 4.0 * np.linalg.norm(weight, axis=1), rtol=1e-5)
    np.testing.assert_array_equal(parts.positions, sinusoidal_table(tiny.module.cfg.max_len, 16))
    per = pa.sentence_norms(tiny, "alpha beta gamma")
    assert per["tokens"] == ("alpha", "beta", "gamma", "</s>")
    np.testing.assert_allclose(per["position_norm"], math.sqrt(8), rtol=1e-6)  # sqrt(d/2)
    ids = [tiny.vocab.tokens.index(t) for t in per["tokens"]]
    np.testing.assert_allclose(per["token_norm"], parts.token_norms[ids])
    with pytest.raises(ValueError):
        pa.sentence_norms(tiny, "alpha purple")


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_wavelengths_are_the_period_of_each_column(layout):
    d, table = 8, sinusoidal_table(4000, 8, layout).astype(np.float64)
    got = pa.wavelengths(d, layout)
    assert got.shape == (d,) and list(got) == [pa.wavelength(c, d, layout) for c in range(d)]
    # the fastest columns: sin(pos / wavelength * 2 pi) read straight off the table
    for column in range(d):
        if got[column] < 500:
            pos = np.arange(4000)
            phase = 2 * np.pi * pos / got[column]
            want = np.sin(phase) if np.allclose(table[0, column], 0) else np.cos(phase)
            np.testing.assert_allclose(table[:, column], want, atol=1e-3)


def test_sinusoid_views_are_the_definitions_on_a_tiny_table():
    length, d = 12, 6
    table = sinusoidal_table(length, d, "split")
    views = pa.sinusoid_views(table, "split", max_rows=5)
    t = table.astype(np.float64)
    want_dots = [[sum(t[i, c] * t[j, c] for c in range(d)) for j in range(5)] for i in range(5)]
    np.testing.assert_allclose(views.dots, want_dots, rtol=1e-5)
    assert views.starts == (0, 3, 6)
    want_offsets = [[float(t[s] @ t[s + k]) for k in range(length - 6)] for s in views.starts]
    np.testing.assert_allclose(views.offsets, want_offsets, rtol=1e-5)
    assert views.shift_error < 1e-5
    # the error of the wrong layout, or of a table that is no sinusoid, is large
    assert pa.shift_error(table, "interleaved") > 0.1
    assert pa.shift_error(np.random.default_rng(0).normal(size=(12, 6))) > 0.1


def test_input_norms_are_the_definitions_on_a_tiny_table():
    positions = np.array([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0], [1.0, 0.0]], np.float32)
    parts = pa.InputVectors(2.0, np.arange(101, dtype=np.float32), positions, "learned")
    norms = pa.input_norms(parts, length=3, max_rows=2, cosine=True)
    np.testing.assert_allclose(norms.position_norms, [5.0, 1.0, 10.0, 1.0])
    assert norms.token_percentiles == pytest.approx((5.0, 50.0, 95.0))  # 0..100: p-th is p
    assert norms.position_median == pytest.approx(3.0)  # (1 + 5) / 2
    np.testing.assert_array_equal(norms.positions, positions[:3])
    np.testing.assert_allclose(norms.cosine, [[1.0, 0.8], [0.8, 1.0]], atol=1e-6)  # 4 / 5
    assert pa.input_norms(parts, length=10, max_rows=2).cosine is None
    assert len(pa.input_norms(parts, length=10, max_rows=2).positions) == 4
    with pytest.raises(ValueError, match="no position table"):
        pa.input_norms(pa.InputVectors(1.0, np.ones(3), None, "rotary"), 3, 2)
