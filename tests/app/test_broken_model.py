"""A model that fails to load shows a message; the rest of the app and other models keep working."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.models import registry

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "attention_maps.py")


@pytest.fixture
def broken(tmp_path, monkeypatch) -> str:
    good = vt.model_info("paper-reverse")
    folder = tmp_path / "paper-broken"
    shutil.copytree(good.path, folder)
    (folder / "model.safetensors").write_bytes(b"not a safetensors file" * 10)
    spec = dataclasses.replace(good, name="paper-broken", path=folder)
    specs = {**registry._installed_specs(), "paper-broken": spec}
    monkeypatch.setattr(registry, "_installed_specs", lambda: specs)
    return "paper-broken"


def test_the_library_raises_one_clear_error(broken):
    with pytest.raises(RuntimeError, match=r"paper-broken cannot be loaded .* other models still"):
        vt.load_model(broken)


def test_the_page_shows_a_message_and_other_models_still_work(broken):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["model"] = broken
    at.run()
    assert not at.exception
    assert "cannot be loaded" in at.error[0].value
    at.selectbox(key="model").set_value("paper-sov").run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2


def test_a_missing_package_leaves_the_other_families(monkeypatch):
    # as if transformers were missing: the spec module cannot be imported
    monkeypatch.setitem(sys.modules, "viz_transformer.models.hf.spec", None)
    specs = registry._installed_specs.__wrapped__()
    assert "minilm" not in specs
    assert {"paper-sov", "bergamot-en-pt"} <= set(specs)
