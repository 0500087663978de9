"""A user's own Hugging Face model, added by path in the sidebar, works on the attention page."""

from __future__ import annotations

import time
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


def test_the_command_an_offline_error_quotes_is_drawn_as_code(at, monkeypatch):
    """The message quotes `hf download owner/name` between backticks: drawn as code (no
    escapes inside, which a code span would show), while the rest stays literal."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    at.text_input(key="hf_id").set_value("someone/not-cached_here")
    at.button(key="add_hf").click().run()
    assert not at.exception
    (error,) = [e.value for e in at.main.error]
    assert "`hf download someone/not-cached_here`" in error
    assert "hf\\:someone/not\\-cached\\_here is not in" in error  # outside: escaped
    assert "\\`" not in error


def test_an_id_the_offline_hub_cannot_give_fails_in_seconds_with_one_error_atop_the_page(
    at, monkeypatch
):
    from huggingface_hub import constants

    from viz_transformer.models.hf import names

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(names, "_HUB_SEEN", {})
    at.text_input(key="hf_id").set_value("someone/not-cached-here")
    start = time.monotonic()
    at.button(key="add_hf").click().run()
    assert time.monotonic() - start < 5
    assert not at.sidebar.error
    errors = [e.value.replace("\\", "") for e in at.main.error]  # Markdown escapes removed
    assert len(errors) == 1 and "cannot reach the hub" in errors[0]
    top = [type(c).__name__ for c in at.main.children.values()][:2]
    assert top == ["Error", "Title"]  # first, above the page's title
    at.run()  # shown once: the next run of the page no longer carries it
    assert not at.error


@pytest.mark.parametrize(
    ("model", "reason"),
    [("paper:/nope", "/nope is not a folder"), ("no-such-model", "unknown model 'no-such-model'")],
)
def test_a_link_to_a_model_that_does_not_load_says_so_atop_the_page(model, reason):
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.query_params["model"] = model
    app.run()
    assert not app.exception and not app.sidebar.error
    errors = [e.value.replace("\\", "") for e in app.main.error]
    assert len(errors) == 1 and reason in errors[0]
    assert errors[0].endswith("Showing paper-en-pt instead.")
    assert app.selectbox(key="model").value == "paper-en-pt"


def test_a_link_to_a_paper_folder_offers_it_in_the_model_list():
    from viz_transformer import settings

    name = f"paper:{settings.WEIGHTS_DIR / 'paper-reverse'}"
    app = AppTest.from_file(PAGE, default_timeout=60)
    app.query_params["model"] = name
    app.run()
    assert not app.exception and not app.error
    assert app.selectbox(key="model").value == name
