"""The walkthrough's score map of a long head (issue 53): block maxima made a band of query rows
at a time, equal to the maxima of the whole map, never the whole ``T x T`` scores held; the
picked query's row read alone."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from pages.sections.qkv_walkthrough import why as section
from viz_transformer.analysis import walkthrough, why
from viz_transformer.figures import why as figures
from viz_transformer.records.tiles import block_reduce
from viz_transformer.testing.hf import BUILDERS

TEXT = " ".join(["the cat sat on the mat and the dog ran to the red house"] * 2)


@pytest.fixture(scope="module")
def cap(tmp_path_factory: pytest.TempPathFactory):
    model = vt.load_model(f"hf:{BUILDERS['llama'](tmp_path_factory.mktemp('why') / 'llama')}")
    return walkthrough.capture(model, TEXT, "decoder", needs=walkthrough.reads(1))


@pytest.mark.parametrize("band", [1, 5, 64])
def test_a_long_heads_block_maxima_equal_those_of_the_whole_map(cap, monkeypatch, band) -> None:
    monkeypatch.setattr(section, "HEAD_MAX", 8)
    monkeypatch.setattr(section, "BAND_ROWS", band)
    whole = why.head_scores(cap, 1, 1)
    assert whole.shape[0] > 8  # long for the lowered limit
    small, (bq, bk) = section._blocks(cap, 1, 1)
    want, wq, wk = block_reduce(whole.astype(np.float32), 8, "max")
    assert (bq, bk) == (wq, wk) and small.shape == want.shape
    np.testing.assert_allclose(small, want, rtol=1e-6)  # -inf blocks (all masked) included
    fig = figures.blocks_map(small, (bq, bk), whole.shape, "L1 H1", (9, 2))
    assert np.isnan(np.asarray(fig.data[0].z, dtype=float)[0, -1])  # wholly masked: grey


def test_a_long_heads_row_is_read_alone(cap) -> None:
    row_of = section._row_of(cap, 1, 1, None)
    np.testing.assert_allclose(row_of(7), why.head_scores(cap, 1, 1)[7])
