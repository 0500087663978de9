"""The positional-encoding page in AppTest: the sinusoid's views and each model family's numbers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis import positional as pa
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/positional_encoding.py"


@pytest.fixture
def by_title(figures) -> Callable[[AppTest, str], dict]:
    """``by_title(at, words)``: the first figure whose title holds ``words``."""

    def find(at: AppTest, words: str) -> dict:
        found = [
            f for f in figures(at) if words in str(f["layout"].get("title", {}).get("text", ""))
        ]
        assert found, f"no figure titled with {words!r}"
        return found[0]

    return find


def test_the_sinusoid_and_bergamots_numbers(decode_array, by_title, open_page, data_downloads):
    at = open_page(PAGE, "bergamot-en-pt")
    assert at.selectbox(key="model").value == "bergamot-en-pt"
    table = sinusoidal_table(100, 128, "interleaved")
    z = decode_array(by_title(at, "PE table")["data"][0]["z"])
    np.testing.assert_allclose(z, table, atol=1e-6)
    dots = decode_array(by_title(at, "dot products")["data"][0]["z"])
    np.testing.assert_allclose(dots, pa.similarity(table), rtol=1e-5, atol=1e-4)
    offsets = [decode_array(t["y"]) for t in by_title(at, "offset k")["data"]]
    for line in offsets[1:]:  # every start gives the same curve
        np.testing.assert_allclose(line, offsets[0], atol=1e-3)
    parts = pa.input_vectors(vt.load_model("bergamot-en-pt"))
    text = " ".join(m.value for m in at.markdown)
    assert f"{np.median(parts.token_norms):.2f}" in text and "11.31" in text  # sqrt(256 / 2)
    assert any("exp(−i·log 10000" in c.value for c in at.caption)
    hist = by_title(at, "Norms of what is added")["data"]
    np.testing.assert_allclose(decode_array(hist[0]["x"]), parts.token_norms, rtol=1e-6)
    assert len(data_downloads(at)) == 2


def test_every_widget_changes_the_view(decode_array, figures, by_title, open_page):
    at = open_page(PAGE, "paper-reverse")
    at.slider[0].set_value(64).run()  # d_model
    at.slider[1].set_value(50).run()  # positions
    at.radio[0].set_value("split").run()
    assert not at.exception
    table = sinusoidal_table(50, 64, "split")
    z = decode_array(by_title(at, "PE table")["data"][0]["z"])
    np.testing.assert_allclose(z, table, atol=1e-6)
    assert "all sines first" in at.caption[0].value
    at.multiselect[0].set_value([3, 40]).run()
    curves = by_title(at, "Chosen dimensions")["data"]
    assert [c["name"].split(",")[0] for c in curves] == ["dim 3", "dim 40"]
    np.testing.assert_allclose(decode_array(curves[1]["y"]), table[:, 40], atol=1e-6)
    assert f"{pa.wavelength(40, 64, 'split'):,.1f}" in curves[1]["name"]

    at.radio[1].set_value("the sentence").run()
    assert not at.exception
    bars = by_title(at, "per token")["data"]
    model = vt.load_model("paper-reverse")
    per = pa.sentence_norms(model, model.spec.example)
    np.testing.assert_allclose(decode_array(bars[0]["y"]), per["token_norm"], rtol=1e-6)
    np.testing.assert_allclose(decode_array(bars[1]["y"]), 8.0, rtol=1e-6)  # sqrt(128 / 2)

    at.text_area(key="sentence").set_value("happy purple ship").run()
    assert not at.exception and "'purple'" in at.error[0].value
    assert len(figures(at)) >= 4  # the sinusoid's views stay


def test_learned_positions_beside_the_sinusoid_and_their_cosine_similarity(
    decode_array, figures, by_title, open_page
):
    at = open_page(PAGE, "minilm")
    table = vt.load_model("minilm").position_table()[:100]
    pair = next(f for f in figures(at) if "learned table" in str(f["layout"].get("annotations")))
    np.testing.assert_allclose(decode_array(pair["data"][0]["z"]), table, atol=1e-6)
    np.testing.assert_allclose(
        decode_array(pair["data"][1]["z"]), sinusoidal_table(100, 384), atol=1e-6
    )
    cos = decode_array(by_title(at, "cosine similarity")["data"][0]["z"])
    np.testing.assert_allclose(cos, pa.similarity(table, cosine=True), atol=1e-5)


@pytest.mark.parametrize(
    ("family", "words", "rotary_charts"), [("llama", "rotates", 2), ("t5", "bias", 0)]
)
def test_rotary_and_relative_models_say_nothing_is_added(
    tmp_path, family, words, rotary_charts, figures, open_page
):
    at = open_page(PAGE, f"hf:{BUILDERS[family](tmp_path / family)}")
    assert any(words in i.value and "nothing is added" in i.value for i in at.info)
    titles = [str(f["layout"].get("title", {}).get("text", "")) for f in figures(at)]
    # The sinusoid's four views, then (rotary only) the rotation angles and the score by offset.
    rotary = [t for t in titles if "Rotation of each" in t or "offset m - n" in t]
    assert len(rotary) == rotary_charts, titles
    assert len(titles) == 4 + rotary_charts, titles
    assert any("Rotary positions in hf:" in h.value for h in at.subheader) == bool(rotary_charts)
