"""The decoder-steps page in AppTest: steps, buttons, URL, beams, teacher forcing, families."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.testing.hf import BUILDERS

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "decoder_steps.py")
REVERSE = "paper-reverse"  # happy king red ship blue sea -> sea blue ship red king happy


def _open(model: str | None = None, params: dict[str, str] | None = None) -> AppTest:
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.query_params.update(params or {})
    app.run()
    if model is not None:
        app.selectbox(key="model").set_value(model).run()
    assert not app.exception, app.exception
    return app


@pytest.fixture
def by_title(figures) -> Callable[[AppTest, str], dict]:
    """``by_title(at, word)``: the one figure whose title holds ``word``."""

    def find(at: AppTest, word: str) -> dict:
        found = [f for f in figures(at) if word in f["layout"]["title"]["text"]]
        assert len(found) == 1, [f["layout"]["title"]["text"] for f in figures(at)]
        return found[0]

    return find


@pytest.fixture
def z_of(decode_array) -> Callable[[dict], np.ndarray]:
    """``z_of(fig)``: the heatmap values of a figure's first trace."""

    def z(fig: dict) -> np.ndarray:
        return decode_array(fig["data"][0]["z"])

    return z


def test_bergamot_shows_cross_rows_top_k_and_says_why_no_self_rows(decode_array, by_title, z_of):
    name = "bergamot-en-pt"
    at = _open(name)
    dec = decode_steps(vt.load_model(name), vt.model_info(name).example)
    assert at.slider(key="step").value == 0 and at.slider(key="step").max == len(dec.steps) - 1
    assert any("recurrent" in i.value for i in at.info)  # SSRU: no self-attention row
    assert any("encoder ran once" in m.value for m in at.markdown)
    cross = by_title(at, "encoder-decoder attention")
    np.testing.assert_allclose(z_of(cross), dec.steps[0].cross_row.reshape(16, -1), atol=1e-6)
    top = by_title(at, "next token")["data"][0]
    np.testing.assert_allclose(decode_array(top["x"]), dec.steps[0].top_probs, atol=1e-6)


def test_next_back_reset_and_the_same_view_after_back(figures, by_title, z_of):
    at = _open(REVERSE)
    model = vt.load_model(REVERSE)
    dec = decode_steps(model, model.spec.example)
    trace = vt.trace(model, model.spec.example)
    before = (figures(at), [m.value for m in at.markdown])
    at.button(key="next").click().run()
    assert at.slider(key="step").value == 1 and at.session_state["step"] == 1
    assert any("`<s>` `sea`" in m.value for m in at.markdown)  # shifted right: <s> + output 0
    self_z = z_of(by_title(at, "masked self-attention"))  # rows: layer x head, columns: positions
    np.testing.assert_allclose(self_z[:, :2], trace.decoder[:, :, 1, :2].reshape(8, 2), atol=1e-5)
    assert np.isnan(self_z[:, 2:]).all() and self_z.shape[1] == len(trace.tgt_tokens)
    cross_z = z_of(by_title(at, "encoder-decoder attention"))
    np.testing.assert_allclose(cross_z, trace.cross[:, :, 1].reshape(8, -1), atol=1e-5)
    at.button(key="back").click().run()
    assert at.session_state["step"] == 0
    assert (figures(at), [m.value for m in at.markdown]) == before
    for _ in range(3):
        at.button(key="next").click().run()
    at.button(key="next").click().run()
    assert at.session_state["step"] == 4
    chosen = by_title(at, "next token")["layout"]["title"]["text"]
    assert dec.steps[4].chosen == "king" and "next token: king" in chosen
    at.button(key="reset").click().run()
    assert at.session_state["step"] == 0 and not at.exception


def test_the_url_restores_the_step_and_a_too_large_step_is_clamped():
    at = _open(params={"model": REVERSE, "step": "3"})
    assert at.slider(key="step").value == 3
    assert any("Decoder input at step 3" in m.value for m in at.markdown)
    at = _open(params={"model": REVERSE, "step": "99"})
    n = len(decode_steps(vt.load_model(REVERSE), vt.model_info(REVERSE).example).steps)
    assert at.slider(key="step").value == n - 1


def test_play_steps_to_the_end_and_greedy_chosen_tokens_are_the_trace(by_title):
    at = _open(REVERSE)
    at.session_state["_play_pause"] = 0.0
    at.button(key="play").click().run()
    trace = vt.trace(vt.load_model(REVERSE), vt.model_info(REVERSE).example)
    assert not at.exception and at.session_state["step"] == len(trace.pred_tokens) - 1
    play = at.button(key="play")
    assert play.label == "Play" and play.icon == ":material/play_arrow:"  # stopped at the end
    title = by_title(at, "next token")["layout"]["title"]["text"]
    assert "next token: &lt;/s&gt;" in title  # the last step ends the output (label escaped)


def test_beam_width_shows_the_beams_and_top_k_changes_the_bars(decode_array, by_title):
    at = _open(REVERSE)
    at.slider(key="beam").set_value(3).run()
    at.button(key="next").click().run()
    beams = by_title(at, "live beams")["data"][0]["cells"]["values"]
    dec = decode_steps(vt.load_model(REVERSE), vt.model_info(REVERSE).example, beam=3)
    assert beams[1] == [" ".join(b.tokens) for b in dec.steps[1].beams]
    assert beams[0].count("→") == 1
    at.slider(key="top_k").set_value(2).run()
    assert len(decode_array(by_title(at, "next token")["data"][0]["x"])) == 2
    at.slider(key="max_steps").set_value(2).run()
    assert at.slider(key="step").max == 1 and not at.exception


def test_teacher_forcing_marks_the_first_divergent_position(figures, by_title):
    at = _open(REVERSE)
    at.text_input(key="target").set_value("sea blue king red ship happy").run()
    assert not at.exception and not at.error
    fig = by_title(at, "Model output vs reference")
    assert "first divergence at position 2" in fig["layout"]["title"]["text"]
    assert fig["layout"]["shapes"][0]["x0"] == 1.5
    assert fig["data"][0]["text"][1] == ["sea", "blue", "king", "red", "ship", "happy"]
    assert any("one parallel pass" in m.value for m in at.markdown)
    assert len(figures(at)) == 6  # top-k, self rows, cross rows, alignment, 2 parallel maps
    at.text_input(key="target").set_value("sea blue purple").run()
    assert not at.exception and "'purple'" in at.error[0].value  # the steps above stay
    assert by_title(at, "next token")


def test_an_encoder_only_model_says_there_is_no_decoder(figures):
    at = _open("minilm")
    assert any("no decoder" in i.value for i in at.info)
    assert not figures(at)


@pytest.mark.parametrize("family", ["marian", "gpt2"])
def test_tiny_hugging_face_models_step(tmp_path, family, by_title):
    path = BUILDERS[family](tmp_path / family)
    at = _open()
    at.text_input(key="hf_id").set_value(str(path))
    next(b for b in at.button if b.label == "Add model").click().run()
    assert not at.exception and at.selectbox(key="model").value == f"hf:{path}"
    at.button(key="next").click().run()
    assert not at.exception and at.session_state["step"] == 1
    if family == "gpt2":
        assert any("no encoder" in i.value for i in at.info)
        assert any("Decoder-only" in m.value for m in at.markdown)
        assert by_title(at, "masked self-attention")
    else:
        assert by_title(at, "encoder-decoder attention") and by_title(at, "self-attention")
