"""The softmax-saturation page in AppTest: synthetic views, a real head with and without the scale,
and the training curves, for every model family."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis import softmax as sm
from viz_transformer.figures.softmax import histogram
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/softmax_saturation.py"
D_KS = np.unique(np.geomspace(1, 1024, 21).round()).astype(int)


@pytest.fixture
def pair(decode_array, figures) -> Callable[[AppTest], list[np.ndarray]]:
    """``pair(at)``: the real head's maps with and without the scale."""

    def pair_of(at: AppTest) -> list[np.ndarray]:
        fig = next(f for f in figures(at) if "without scale" in str(f["layout"].get("annotations")))
        return [decode_array(t["z"]) for t in fig["data"]]

    return pair_of


def test_default_render_synthetic_views_match_the_library(
    decode_array, figures, open_page, data_downloads
):
    at = open_page(PAGE)
    figs = figures(at)
    assert len(figs) == 5
    raw = sm.dot_products(64, 20_000)
    x, y = histogram(raw)
    np.testing.assert_allclose(decode_array(figs[0]["data"][0]["y"]), y, rtol=1e-6)
    np.testing.assert_allclose(decode_array(figs[0]["data"][0]["x"]), x, rtol=1e-6)
    assert "(d_k = 64)" in str(figs[0]["layout"]["annotations"])
    curves = sm.saturation_curves(16, D_KS)
    by_name = {(t["name"], t["yaxis"]): decode_array(t["y"]) for t in figs[1]["data"]}
    np.testing.assert_allclose(by_name[("without scale", "y2")], curves["max_weight_unscaled"])
    np.testing.assert_allclose(by_name[("with 1/√d_k", "y3")], curves["jacobian_norm_scaled"])
    weights = sm.softmax(sm.score_rows(16, 64)[0] / 8.0)
    np.testing.assert_allclose(decode_array(figs[2]["data"][0]["y"]), weights, rtol=1e-6)
    assert len(data_downloads(at)) == 6  # synthetic, head, training


def test_real_head_is_the_captured_pattern_and_its_unscaled_derivation(open_page, pair):
    at = open_page(PAGE, "bergamot-en-pt")  # d_k = 32
    model = vt.load_model("bergamot-en-pt")
    trace = vt.trace(model, model.spec.example)
    left, right = pair(at)
    np.testing.assert_allclose(left, trace.encoder[0, 0], atol=1e-6)
    np.testing.assert_allclose(right, sm.rescale(trace.encoder[0, 0], math.sqrt(32)), atol=1e-6)
    assert len(at.radio(key="kind").options) == 2
    at.radio(key="kind").set_value("cross").run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(5).run()
    assert not at.exception
    left, right = pair(at)
    np.testing.assert_allclose(left, trace.cross[1, 5], atol=1e-6)
    np.testing.assert_allclose(right, sm.rescale(trace.cross[1, 5], math.sqrt(32)), atol=1e-6)
    table = at.table[0].value
    stats = sm.pattern_stats(right)
    assert table["mean max weight"].iloc[1] == f"{stats['max_weight']:.3f}"
    assert table["saturated rows (max > 0.99)"].iloc[1] == f"{stats['saturated']:.0%}"


def test_every_synthetic_widget_changes_the_view(decode_array, figures, open_page):
    at = open_page(PAGE, "paper-sov")
    at.select_slider[0].set_value(256).run()
    at.slider[0].set_value(8).run()  # keys
    at.slider[1].set_value(0.5).run()  # temperature
    assert not at.exception
    figs = figures(at)
    _, y = histogram(sm.dot_products(256, 20_000))
    np.testing.assert_allclose(decode_array(figs[0]["data"][0]["y"]), y, rtol=1e-6)
    curves = sm.saturation_curves(8, D_KS)
    np.testing.assert_allclose(decode_array(figs[1]["data"][0]["y"]), curves["entropy_scaled"])
    weights = sm.softmax(sm.score_rows(8, 256)[0] / 16.0 / 0.5)
    np.testing.assert_allclose(decode_array(figs[2]["data"][0]["y"]), weights, rtol=1e-6)
    assert "T = 0.5" in figs[2]["layout"]["title"]["text"]


def test_paper_model_decoder_head_and_its_training_curves(decode_array, figures, open_page, pair):
    at = open_page(PAGE, "paper-sov")
    at.radio(key="kind").set_value("decoder").run()
    at.selectbox(key="head").set_value(3).run()
    model = vt.load_model("paper-sov")
    trace = vt.trace(model, model.spec.example)
    left, right = pair(at)
    np.testing.assert_allclose(left, trace.decoder[0, 3], atol=1e-6)
    assert (np.triu(right, k=1) == 0).all()  # masked stays masked
    np.testing.assert_allclose(right, sm.rescale(trace.decoder[0, 3], math.sqrt(32)), atol=1e-6)
    train = next(f for f in figures(at) if "trained twice" in str(f["layout"].get("title")))
    curves = model.meta["curves"]
    lines = {(t["name"], t["yaxis"]): decode_array(t["y"]) for t in train["data"]}
    np.testing.assert_allclose(lines[("without scale", "y")], curves["unscaled"]["loss"])
    np.testing.assert_allclose(lines[("with 1/√d_k", "y2")], curves["scaled"]["grad_norm"])
    assert not at.selectbox(key="model").value.startswith("bergamot")


def test_paper_en_pt_shows_its_own_two_runs_and_what_they_share(figures, open_page):
    """Issue 18: the default model recorded a run without 1/sqrt(d_k); the page shows both runs
    over the steps both took, and says how they started."""
    at = open_page(PAGE, "paper-en-pt")
    model = vt.load_model("paper-en-pt")
    curves = model.training_curves()
    assert curves is not None and not any("trained once" in i.value for i in at.info)
    titles = [str(f["layout"].get("title", {}).get("text")) for f in figures(at)]
    train = figures(at)[titles.index("paper-en-pt: trained twice (English -> Portuguese)")]
    end = curves["unscaled"]["step"][-1]
    assert end < curves["scaled"]["step"][-1]
    assert list(train["layout"]["xaxis"]["range"]) == [0, end]
    captions = " ".join(c.value for c in at.caption)
    assert model.training_note() in captions and f"stopped at {end:,}" in captions


def test_non_paper_model_picks_training_curves_from_a_select_box(
    decode_array, figures, open_page, pair
):
    at = open_page(PAGE, "minilm")
    picker = at.selectbox(key="train_model")
    assert picker.label == "Paper task model trained both ways" and "paper-dates" in picker.options
    picker.set_value("paper-dates").run()
    assert not at.exception
    train = figures(at)[-1]
    assert "paper-dates" in train["layout"]["title"]["text"]
    curves = vt.load_model("paper-dates").meta["curves"]
    np.testing.assert_allclose(decode_array(train["data"][0]["y"]), curves["scaled"]["loss"])
    left, _ = pair(at)
    trace = vt.trace(vt.load_model("minilm"), vt.model_info("minilm").example)
    np.testing.assert_allclose(left, trace.encoder[0, 0], atol=1e-6)


def test_t5_does_not_scale_so_its_pattern_is_the_unscaled_one(tmp_path, open_page, pair):
    path = BUILDERS["t5"](tmp_path / "t5")
    at = open_page(PAGE, f"hf:{path}")
    assert any("does not divide" in i.value for i in at.info)
    trace = vt.trace(vt.load_model(f"hf:{path}"), at.text_area(key="sentence").value)
    left, right = pair(at)
    np.testing.assert_allclose(right, trace.encoder[0, 0], atol=1e-6)
    np.testing.assert_allclose(left, sm.rescale(trace.encoder[0, 0], 1 / math.sqrt(8)), atol=1e-6)


def test_bad_input_keeps_the_other_sections(figures, open_page):
    at = open_page(PAGE, "paper-sov")
    at.text_area(key="sentence").set_value("the purple cat").run()
    assert not at.exception
    assert "'purple'" in at.error[0].value
    assert len(figures(at)) == 4  # synthetic views and training curves stay


def test_a_long_heads_statistics_read_every_row_a_few_rows_at_a_time(monkeypatch) -> None:
    from pages.sections.softmax_saturation import saturation
    from viz_transformer.models.results import HeadScale
    from viz_transformer.records.lazy import LazyPatterns

    monkeypatch.setattr(saturation, "ROWS", 7)  # 40 rows: 6 parts, the last of 5
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 2, 40, 8)), rng.normal(size=(1, 2, 40, 8))
    lazy = LazyPatterns(list(q.astype(np.float32)), list(k.astype(np.float32)), causal=True)
    scale = HeadScale(8, True)
    whole = [sm.pattern_stats(p) for p in sm.with_and_without_scale(lazy[0, 1], scale)]
    for patterns in (lazy, np.asarray(lazy)):
        parts = saturation._head_stats(patterns, 0, 1, scale)
        for got, want in zip(parts, whole, strict=True):
            assert got.keys() == want.keys()
            np.testing.assert_allclose(list(got.values()), list(want.values()), rtol=1e-5)
