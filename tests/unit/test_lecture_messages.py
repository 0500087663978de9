"""Issue 28's smaller points checkable without a browser: the built-in model named when its
hub id is not cached, and the LLM offered an English model."""

from __future__ import annotations

import pytest

import viz_transformer as vt
from viz_transformer.models.registry import nearest_model


def test_an_uncached_smollm2_hub_id_names_the_builtin_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-vt-test-cache")
    with pytest.raises(ValueError, match="built-in model smollm2 is SmolLM2-135M-Instruct"):
        vt.model_info("hf:HuggingFaceTB/SmolLM2-135M")


@pytest.mark.needs("smollm2")
def test_the_llm_is_offered_a_model_that_reads_english():
    other = nearest_model("smollm2", lambda spec: "cross" in spec.shows)
    assert vt.model_info(other).source_lang == "en"
