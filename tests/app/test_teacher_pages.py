"""Issue 17 in AppTest: a many-layer decoder shows one chosen layer's rows, and a switch button
keeps or replaces the sentence as the new model can take it."""

from __future__ import annotations

import html

import numpy as np

import viz_transformer as vt
from pages.sections.decoder_steps import step_view as decoder_view
from viz_transformer.analysis import decoding

DECODER, ATTENTION = "pages/decoder_steps.py", "pages/attention_maps.py"


def test_a_many_layer_decoder_shows_the_heads_of_one_chosen_layer(
    monkeypatch, open_page, figures, decode_array
):
    monkeypatch.setattr(decoder_view, "MANY_LAYERS", 1)  # paper-reverse has 2 decoder layers
    at = open_page(DECODER, "paper-reverse", {"dec_layer": "1", "step": "1"})
    assert at.selectbox(key="dec_layer").value == 1
    cross = next(
        f for f in figures(at) if "encoder-decoder attention" in f["layout"]["title"]["text"]
    )
    model = vt.load_model("paper-reverse")
    dec = decoding.decode_steps(model, model.spec.example, 40, 1, 5)
    n_heads = dec.steps[1].cross_row.shape[1]
    assert cross["layout"]["yaxis"]["ticktext"] == [f"L1 H{h}" for h in range(n_heads)]
    np.testing.assert_allclose(
        decode_array(cross["data"][0]["z"]), dec.steps[1].cross_row[1], atol=1e-6
    )
    assert "dec_layer" in at.query_params


def test_switching_keeps_a_sentence_the_new_model_reads(open_page):
    at = open_page(ATTENTION, "bergamot-en-pt")  # no decoder self-attention: a switch offered
    at.button(key="switch-decoder masked self-attention-paper-en-pt").click().run()
    assert at.session_state["model"] == "paper-en-pt"
    assert at.session_state["sentence"] == vt.model_info("bergamot-en-pt").example  # English
    at = open_page(DECODER, "minilm")  # an encoder: the decoder page offers a model with one
    [switch] = [b for b in at.button if b.label.startswith("Switch to")]
    switch.click().run()
    assert not at.exception and at.session_state["model"] == "paper-en-pt"  # English first
    assert at.session_state["sentence"] == vt.model_info("minilm").example  # English: kept
    assert at.get("plotly_chart")  # the steps are drawn now


def test_home_shows_one_small_head_of_each_kind_the_model_has(open_page, figures, decode_array):
    at = open_page("app.py", "bergamot-en-pt")  # encoder self and cross-attention, no decoder self
    encoder, cross = figures(at)  # small charts, above the model line and Figure 1's parts
    assert all(fig["layout"]["height"] <= 400 for fig in (encoder, cross))
    trace = vt.trace(vt.load_model("bergamot-en-pt"), vt.model_info("bergamot-en-pt").example)
    np.testing.assert_allclose(decode_array(cross["data"][0]["z"]), trace.cross[-1, 0], atol=1e-6)
    encoder_z = decode_array(encoder["data"][0]["z"])
    np.testing.assert_allclose(encoder_z, trace.encoder[-1, 0], atol=1e-6)
    labels = [html.unescape(t) for t in cross["layout"]["xaxis"]["ticktext"]]
    assert labels == list(trace.src_tokens)
    assert any("Attention maps" in c.value for c in at.caption)


def test_unknown_characters_are_counted_and_the_token_marks_explained(open_page):
    at = open_page(ATTENTION, "bergamot-en-pt", {"sentence": "I like 😀 and 日本."})
    warning = next(w.value for w in at.warning if "cannot read" in w.value)
    assert warning.startswith("3 characters this model cannot read (2 unknown tokens: 😀, 日本)")
    assert any("##s" in c.value and "<unk:😀>" in c.value for c in at.caption)
