"""A user's own Hugging Face model, added by path in the sidebar, works on the attention page."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from viz_transformer.testing.hf import BUILDERS

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "attention_maps.py")


@pytest.fixture
def at() -> AppTest:
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.run()
    return app


@pytest.mark.parametrize("family", ["gpt2", "marian"])
def test_a_local_hf_model_is_added_selected_and_drawn(at, tmp_path, family, figures):
    path = BUILDERS[family](tmp_path / family)
    at.text_input(key="hf_id").set_value(str(path))
    at.button(key="add_hf").click().run()  # "Add model"
    assert not at.exception
    assert at.selectbox(key="model").value == f"hf:{path}"
    assert at.text_area(key="sentence").value  # the family's example sentence
    assert not at.error and len(figures(at)) == 2
    kinds = {"gpt2": 1, "marian": 3}[family]
    assert len(at.radio(key="kind").options) == kinds


def test_an_unknown_or_malformed_id_gets_a_message_and_keeps_the_model(at, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = at.selectbox(key="model").value
    for bad in ("no-such-owner/no-such-model", "../../etc"):
        at.text_input(key="hf_id").set_value(bad)
        at.button(key="add_hf").click().run()
        assert not at.exception
        assert at.selectbox(key="model").value == before
        shown = [e.value.replace("\\", "") for e in at.error]  # Markdown escapes removed
        assert any(bad.strip("./") in v or "hf:" in v for v in shown)
