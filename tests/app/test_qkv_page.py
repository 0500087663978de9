"""The Q, K, V walkthrough page in AppTest: default view, every widget, numbers vs the library."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.models.results import QKV_NOTE
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/qkv_walkthrough.py"


@pytest.fixture
def numbers(decode_array) -> Callable[[dict], dict[str, np.ndarray]]:
    """``numbers(fig)``: the arrays a figure draws, by the name of the step they show."""

    def numbers_of(fig: dict) -> dict[str, np.ndarray]:
        return {f"{i}": decode_array(d["z"]) for i, d in enumerate(fig["data"]) if "z" in d}

    return numbers_of


@pytest.fixture
def check_figures(figures, numbers) -> Callable[[AppTest, wt.Walkthrough, vt.Trace], None]:
    """``check_figures(at, expected, trace)``: every figure of the page shows the library's
    numbers for this walkthrough."""

    def check(at: AppTest, expected: wt.Walkthrough, trace: vt.Trace) -> None:
        inp, vectors, table, weighted, output = figures(at)[:5]  # the why section follows
        parts = (
            [expected.embed, expected.pos, expected.x]
            if expected.embed is not None
            else [expected.x]
        )
        np.testing.assert_allclose(numbers(inp)["0"], np.stack(parts), atol=1e-6)
        got = numbers(vectors)
        np.testing.assert_allclose(got["0"][0], expected.q, atol=1e-6)
        np.testing.assert_allclose(got["1"], expected.k, atol=1e-6)
        np.testing.assert_allclose(got["2"], expected.v, atol=1e-6)
        cells = table["data"][0]["cells"]["values"]
        shown = np.array([float(c) for c in cells[4]])  # the softmax column, 4 decimals
        row = trace.get(expected.kind)[expected.layer, expected.head, expected.position]
        np.testing.assert_allclose(shown, row, atol=5e-5 + 1e-6)
        finite = np.isfinite(expected.scaled)
        assert all(c == "−∞ (masked)" for c, f in zip(cells[3], finite, strict=True) if not f)
        got = numbers(weighted)
        np.testing.assert_allclose(got["0"], expected.weights[:, None] * expected.v, atol=1e-6)
        np.testing.assert_allclose(got["1"][0], expected.z, atol=1e-6)
        got = numbers(output)
        np.testing.assert_allclose(got["0"][0], expected.concat, atol=1e-6)
        np.testing.assert_allclose(got["1"][0], expected.out, atol=1e-6)

    return check


BERGAMOT = "bergamot-en-pt"


@pytest.fixture
def at(open_page) -> AppTest:
    return open_page(PAGE, BERGAMOT)


def test_the_default_model_offers_all_three_kinds(open_page, check_figures):
    at = open_page(PAGE)
    name = vt.default_model()
    model, text = vt.load_model(name), vt.model_info(name).example
    assert at.selectbox(key="model").value == name and at.text_area(key="sentence").value == text
    assert at.radio(key="kind").options == [
        "Encoder self-attention",
        "Decoder masked self-attention",
        "Encoder-decoder (cross) attention",
    ]
    at.radio(key="kind").set_value("decoder").run()
    check_figures(at, wt.walkthrough(model, text, "decoder", 0, 0, 1), vt.trace(model, text))


def test_bergamot_view_starts_at_the_second_source_token_of_its_example(
    at, check_figures, data_downloads
):
    name = BERGAMOT
    model, text = vt.load_model(name), vt.model_info(name).example
    assert at.text_area(key="sentence").value == text
    assert (at.radio(key="kind").value, at.selectbox(key="token").value) == ("encoder", 1)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (0, 0)
    check_figures(at, wt.walkthrough(model, text, "encoder", 0, 0, 1), vt.trace(model, text))
    assert "recurrent" in at.info[0].value  # Bergamot: no decoder self-attention, said once
    assert at.radio(key="kind").options == [
        "Encoder self-attention",
        "Encoder-decoder (cross) attention",
    ]
    # the walkthrough's data, then the why section's scores
    assert [b.label for b in data_downloads(at)] == ["Data as JSON", "Data as NPZ"] * 2
    assert len(at.latex) == 6  # the header's MultiHead and one equation per step


def test_bergamot_cross_attention_and_every_widget(at, check_figures):
    name = BERGAMOT
    model, text = vt.load_model(name), vt.model_info(name).example
    at.radio(key="kind").set_value("cross").run()
    assert at.selectbox(key="token").options[0] == "0: <s> (predicts O)"
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(5).run()
    at.selectbox(key="token").set_value(3).run()
    assert not at.exception
    check_figures(at, wt.walkthrough(model, text, "cross", 1, 5, 3), vt.trace(model, text))


def test_paper_model_decoder_masks_the_future_and_text_changes_keep_a_valid_token(
    at, check_figures
):
    at.selectbox(key="model").set_value("paper-sov").run()
    at.radio(key="kind").set_value("decoder").run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(3).run()
    at.selectbox(key="token").set_value(2).run()
    assert not at.exception
    model, text = vt.load_model("paper-sov"), vt.model_info("paper-sov").example
    expected = wt.walkthrough(model, text, "decoder", 1, 3, 2)
    assert not expected.keep[3:].any()
    check_figures(at, expected, vt.trace(model, text))
    caption = " ".join(c.value for c in at.caption)  # read from the model, not typed in
    assert "LayerNorm(x + output) (post-norm)" in caption and "implementations add them" in caption
    at.radio(key="kind").set_value("encoder").run()
    last = len(at.selectbox(key="token").options) - 1  # "</s>" of the 8-word example
    at.selectbox(key="token").set_value(last).run()
    at.text_area(key="sentence").set_value("the small cat").run()
    assert not at.exception
    assert last == 8 and at.selectbox(key="token").value == 1  # 4 tokens now: the default


def test_layer_zero_shows_embedding_and_position_deeper_layers_only_the_stream(
    at, decode_array, figures
):
    at.selectbox(key="model").set_value("paper-dates").run()
    assert len(decode_array(figures(at)[0]["data"][0]["z"])) == 3
    at.selectbox(key="layer").set_value(1).run()
    assert len(decode_array(figures(at)[0]["data"][0]["z"])) == 1
    assert "output of layer 0" in at.latex[1].value
    assert "x_iW^Q_{0}+b^Q_{0}" in at.latex[2].value and "W^O+b^O" in at.latex[5].value  # biases


def test_url_restores_the_view(check_figures, open_page):
    params = {"model": "paper-reverse", "kind": "cross", "layer": "1", "head": "2"}
    app = open_page(PAGE, params=params)
    model, text = vt.load_model("paper-reverse"), vt.model_info("paper-reverse").example
    check_figures(app, wt.walkthrough(model, text, "cross", 1, 2, 1), vt.trace(model, text))


def test_hugging_face_models_and_bad_input_get_one_sentence_not_a_traceback(
    at, figures, open_page, tmp_path
):
    at.selectbox(key="model").set_value("minilm").run()  # BERT family: walked through
    assert not at.exception and len(figures(at)) == 5 + 2  # steps; why: map, dimensions
    assert all(i.value != QKV_NOTE for i in at.info)
    bart = open_page(PAGE, model=f"hf:{BUILDERS['bart'](tmp_path / 'bart')}")  # not walked
    assert not bart.exception and not figures(bart)
    assert [i.value for i in bart.info].count(QKV_NOTE) == 1
    at.selectbox(key="model").set_value("paper-sov").run()
    at.text_area(key="sentence").set_value("the old farmers feed a purple cat").run()
    assert not at.exception and "'purple'" in at.error[0].value
    assert at.text_area(key="sentence").value == "the old farmers feed a purple cat"
