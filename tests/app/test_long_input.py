"""Long inputs on the attention page: lazy per-head maps, downsampled heads with a full-resolution
window, an overview on request, and summaries that need every head refused with a message.

The limits are lowered so a tiny BERT exercises the same paths as a 4,096-token input.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from viz_transformer import settings
from viz_transformer.figures import attention
from viz_transformer.models.devices import default_device
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.records.lazy import block_reduce
from viz_transformer.testing.hf import BUILDERS

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "attention_maps.py")
TEXT = " ".join(["the cat sat on the mat and the dog ran to the red house"] * 2)  # 28 words


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"hf:{BUILDERS['bert'](tmp_path_factory.mktemp('long') / 'bert')}"


@pytest.fixture
def at(bert, eager, monkeypatch) -> AppTest:
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    monkeypatch.setattr(settings, "MAX_MATERIALISE", 1000)  # fewer than 2 x 2 x 30 x 30 weights
    monkeypatch.setattr(attention, "HEAD_MAX", 8)
    monkeypatch.setattr(attention, "OVERVIEW_MAX", 8)
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.run()
    app.text_input(key="hf_id").set_value(bert.removeprefix("hf:"))
    app.button(key="add_hf").click().run()  # "Add model"
    app.text_area(key="sentence").set_value(TEXT).run()
    assert not app.exception, app.exception
    return app


@pytest.fixture(scope="module")
def eager(bert) -> np.ndarray:
    """The whole ``[layers, heads, q, k]`` array under the default limits (no lazy capture)."""
    trace = HFModel.load(hf_spec(bert), default_device()).trace(TEXT)
    assert isinstance(trace.encoder, np.ndarray)
    return trace.encoder


def test_a_long_map_is_drawn_as_block_maxima_and_the_overview_waits(
    at, eager, decode_array, figures
):
    figs = figures(at)
    assert len(figs) == 1  # no overview until asked: it computes every head
    z = decode_array(figs[0]["data"][0]["z"])
    full = eager[0, 0]
    assert z.shape == block_reduce(full, 8)[0].shape and max(z.shape) <= 8
    np.testing.assert_allclose(z, block_reduce(full, 8, "max")[0], atol=1e-5)
    assert "max of a" in figs[0]["layout"]["title"]["text"]

    at.toggle(key="ov").set_value(True).run()
    assert not at.exception and len(figures(at)) == 2
    tiles = decode_array(figures(at)[0]["data"][0]["z"])
    assert np.nanmax(tiles) <= 1.0 and tiles.shape[0] < 2 * 10  # 2 layers of <= 8 rows + gap


def test_the_zoom_window_shows_full_resolution_with_token_labels(at, eager, decode_array, figures):
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(1).run()
    at.toggle(key="zoom").set_value(True).run()
    at.number_input(key="zoom_size").set_value(8).run()
    at.number_input(key="zoom_q").set_value(8).run()
    assert not at.exception
    fig = figures(at)[0]
    z = decode_array(fig["data"][0]["z"])
    np.testing.assert_allclose(z, eager[1, 1][8:16, 0:8], atol=1e-5)
    assert len(fig["layout"]["xaxis"]["ticktext"]) == 8
    assert "queries 8-15, keys 0-7" in fig["layout"]["title"]["text"]


@pytest.mark.parametrize("tab", ["Mean / max / rollout", "Statistics"])
def test_summaries_over_every_head_say_why_they_are_off(at, tab):
    at.session_state["attn_tab"] = tab
    at.run()
    assert not at.exception
    assert any("one head at a time" in i.value for i in at.info)


def test_summaries_of_a_lazy_trace_that_fits_are_computed(
    at, eager, monkeypatch, decode_array, figures
):
    monkeypatch.setattr(settings, "MAX_MATERIALISE", 10**9)
    at.session_state["attn_tab"] = "Mean / max / rollout"
    at.run()
    assert not at.exception
    z = decode_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_allclose(z, eager[0].mean(0), atol=1e-5)  # layer 0, head mean


def test_the_download_of_a_head_too_large_to_hold_is_what_the_figure_draws(
    bert, eager, monkeypatch
):
    from pages.sections.attention_maps.tabs import MapView, _data

    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    monkeypatch.setattr(attention, "HEAD_MAX", 8)
    trace = HFModel.load(hf_spec(bert), default_device()).trace(TEXT)
    view = MapView(bert, TEXT, trace, "encoder", 1, False)
    fig = attention.head_figure(trace, "encoder", 1, 0)
    np.testing.assert_allclose(_data(view, 0, fig)["encoder_layer1_head0"], eager[1, 0], atol=1e-5)
    monkeypatch.setattr(settings, "MAX_MATERIALISE", eager[1, 0].size - 1)  # one head too many
    (drawn,) = _data(view, 0, fig).values()
    np.testing.assert_allclose(drawn, block_reduce(eager[1, 0], 8, "max")[0], atol=1e-5)
