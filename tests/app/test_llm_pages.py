"""Decoder-only models in the app: sampling and chat on the decoder page (a tiny random Llama,
and the built-in smollm2 converted once per run), and smollm2 on the attention page."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis.sampling import Sampling, sample_steps
from viz_transformer.testing.hf import BUILDERS

PAGES = Path(__file__).resolve().parents[2] / "pages"


def _open(page: str, model: str) -> AppTest:
    app = AppTest.from_file(str(PAGES / page), default_timeout=120)
    app.run()
    if model.startswith("/"):
        app.text_input(key="hf_id").set_value(model)
        next(b for b in app.button if b.label == "Add model").click().run()
        model = f"hf:{model}"
    else:
        app.selectbox(key="model").set_value(model).run()
    assert not app.exception, app.exception
    assert app.selectbox(key="model").value == model
    return app


def test_sampling_on_the_decoder_page_is_seeded_and_shown(tmp_path):
    path = BUILDERS["llama"](tmp_path / "llama")
    at = _open("decoder_steps.py", str(path))
    assert at.toggle(key="gen_chat").disabled  # the tiny model has no chat template
    at.toggle(key="gen_sample").set_value(True).run()
    at.slider(key="gen_temperature").set_value(1.5).run()
    model = vt.load_model(f"hf:{path}")
    text = at.text_area(key="sentence").value
    seed, want = next(
        (seed, dec)
        for seed in range(20)
        if len((dec := sample_steps(model, text, 40, Sampling(1.5, 50, 0.95, seed))).steps) > 2
    )  # a draw that does not end at once
    at.number_input(key="gen_seed").set_value(seed).run()
    assert not at.exception and not at.error
    assert any(f"seed {seed} makes the draw reproducible" in c.value for c in at.caption)
    assert at.slider(key="step").max == len(want.steps) - 1
    at.slider(key="step").set_value(2).run()
    shown = " ".join(m.value for m in at.markdown)
    assert " ".join(f"`{t}`" for t in want.steps[2].input_tokens) in shown


@pytest.mark.slow
def test_smollm2_chats_on_the_decoder_page_and_draws_its_maps(smollm2_model):
    at = _open("decoder_steps.py", "smollm2")
    at.toggle(key="gen_chat").set_value(True).run()
    assert not at.exception and not at.error
    shown = " ".join(m.value for m in at.markdown)
    assert "im_start" in shown and "assistant" in shown  # the chat template's tokens
    at = _open("attention_maps.py", "smollm2")
    assert not at.exception and not at.error
