"""The Q/K/V walkthrough page on a Hugging Face Llama (tiny, random): it draws every step, and the
weights chart is the model's own attention row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from viz_transformer.models.random_init.hf import BUILDERS

PAGE = "pages/qkv_walkthrough.py"


def test_llama_walkthrough_draws_every_step(
    open_page: Callable[..., AppTest], figures: Callable, tmp_path: Path
) -> None:
    at = open_page(PAGE, model=f"hf:{BUILDERS['llama'](tmp_path / 'llama')}")
    assert len(figures(at)) == 5  # input, q/k/v, scores, weighted sum, output
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
