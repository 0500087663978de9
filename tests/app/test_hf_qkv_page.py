"""The Q/K/V walkthrough page on Hugging Face models (tiny random Llama and GPT-2, the shipped
MiniLM): it draws every step, the softmax column is the model's own attention row, and the caption
and equations say where the model's norm sits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/qkv_walkthrough.py"


def test_llama_walkthrough_draws_every_step(
    open_page: Callable[..., AppTest], figures: Callable, tmp_path: Path
) -> None:
    at = open_page(PAGE, model=f"hf:{BUILDERS['llama'](tmp_path / 'llama')}")
    # input, q/k/v, scores, weighted sum, output; why: score map, dimensions, component split's
    # two marginals and top pairs (no input split: RoPE adds no positions to the input)
    assert len(figures(at)) == 5 + 5
    assert not any("Llama-family" in i.value for i in at.info)
    at.selectbox(key="head").set_value(3).run()
    assert not at.exception, at.exception
    caption = " ".join(c.value for c in at.caption)  # read from the model: pre-norm, no biases
    assert "Pre-norm: x is the block's input after its LlamaRMSNorm" in caption
    assert "post-norm" not in caption and "without biases; neither does" in caption
    assert "(RoPE)" in caption
    # the equations are the model's own: RMSNorm input, RoPE-rotated q and k, no biases
    equations = [e.value for e in at.latex[1:]]  # after the header's MultiHead
    assert r"\mathrm{RMSNorm}(r_i)" in equations[0]
    assert r"R_{\Theta,i}(x_iW^Q_{3})" in equations[1] and "b^" not in equations[1]
    assert "b^O" not in equations[4]


def _softmax_column(table: dict) -> np.ndarray:
    """The scores table's softmax column (4 decimals) as numbers."""
    return np.array([float(c) for c in table["data"][0]["cells"]["values"][4]])


def test_gpt2_walkthrough_draws_every_step_with_its_layernorm(
    open_page: Callable[..., AppTest], figures: Callable, tmp_path: Path
) -> None:
    folder = BUILDERS["gpt2"](tmp_path / "gpt2")
    at = open_page(PAGE, model=f"hf:{folder}")
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="token").set_value(3).run()
    assert not at.exception, at.exception
    drawn = figures(at)
    assert len(drawn) == 5 + 5  # the steps; why: map, dimensions, components (input: layer 0)
    # the softmax column is the model's own attention row; masked after the query token
    model, text = vt.load_model(f"hf:{folder}"), at.text_area(key="sentence").value
    row = vt.trace(model, text).get("decoder")[1, at.selectbox(key="head").value, 3]
    np.testing.assert_allclose(_softmax_column(drawn[2]), row, atol=5e-5 + 1e-6)
    scaled = drawn[2]["data"][0]["cells"]["values"][3]
    assert all(c == "−∞ (masked)" for c in scaled[4:]) and "masked" not in scaled[3]
    caption = " ".join(c.value for c in at.caption)  # read from the model: pre-norm LayerNorm
    assert "Pre-norm: x is the block's input after its LayerNorm" in caption
    assert "these implementations add them" in caption and "(RoPE)" not in caption
    equations = [e.value for e in at.latex[1:]]  # after the header's MultiHead
    assert r"\mathrm{LayerNorm}(r_i)" in equations[0] and r"\odot g+b" in equations[0]
    assert r"x_iW^Q_{" in equations[1] and "+b^Q_{" in equations[1] and "R_{" not in equations[1]
    assert r"\tilde s_{ij}=-\infty\ (j>i)" in equations[2] and "+b^O" in equations[4]


def test_minilm_walkthrough_draws_every_step_post_norm(
    open_page: Callable[..., AppTest], figures: Callable
) -> None:
    at = open_page(PAGE, model="minilm")
    # the steps; why: map and dimensions (BERT: embedding LayerNorm, post-norm: no other split)
    assert len(figures(at)) == 5 + 2 and at.radio(key="kind").value == "encoder"
    assert not any("Llama-family" in i.value for i in at.info)
    caption = " ".join(c.value for c in at.caption)  # BERT: post-norm, biases
    assert "LayerNorm(x + output) (post-norm)" in caption and "Pre-norm" not in caption
    assert "these implementations add them" in caption
    equations = [e.value for e in at.latex[1:]]
    assert "embedding layer's output" in equations[0] and "+b^Q_{" in equations[1]
    at.selectbox(key="layer").set_value(5).run()
    at.selectbox(key="head").set_value(11).run()
    assert not at.exception, at.exception
    assert len(figures(at)) == 5 + 2 and "output of layer 4" in at.latex[1].value
    trace = vt.trace(vt.load_model("minilm"), at.text_area(key="sentence").value)
    row = trace.get("encoder")[5, 11, at.selectbox(key="token").value]
    np.testing.assert_allclose(_softmax_column(figures(at)[2]), row, atol=5e-5 + 1e-6)
