"""Every text architecture transformers ships, as a tiny random model (``testing.architectures``)
loaded through ``hf:<folder>``: every map of ``vt.trace`` equals the same model's eager
``output_attentions`` within 1e-5 on the default path and the long-input path
(``testing.architecture_check``), or the loader refuses with a message where the family has no
softmax attention map.

A family not listed below must be right. Each listed family is expected to stay exactly as
listed, with the reason: when a fix makes one right, this test fails on it until its entry goes.
"""

from __future__ import annotations

import pytest
import torch

from viz_transformer import settings
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.testing.architecture_check import check
from viz_transformer.testing.architectures import ARCHITECTURES, TEXT, BuildError, built

# no softmax attention map: a state-space, recurrent, Fourier or kernel mixer; refusing is right
NO_MAP = {
    "fnet": "Fourier mixing",
    "mamba": "state space",
    "mamba2": "state space",
    "falcon_mamba": "state space",
    "rwkv": "recurrent",
    "xlstm": "recurrent",
    "mra": "multiresolution approximation",
    "yoso": "hashing approximation",
}
# known, with why: the entry goes when a fix makes the family right
KNOWN: dict[str, tuple[str, str]] = {
    "deepseek_v4": ("refused", "maps of several shapes in one stack (compressed keys)"),
    "t5gemma2": ("refused", "maps of several shapes in one stack"),
    # weights returned (not declared) in a form that is no query x key softmax map
    "cpmant": ("refused", "returned rows do not sum to 1"),
    "prophetnet": ("refused", "returned encoder rows do not sum to 1"),
    "squeezebert": ("refused", "returns its scores before the softmax as attentions"),
    "led": ("refused", "local attention returned in bands of keys"),
    "longformer": ("refused", "local attention returned in bands of keys"),
    "longt5": ("refused", "local attention returned in blocks"),
    "funnel": ("refused", "pooled queries: maps of fewer queries than tokens"),
    "xlnet": ("refused", "returned maps are permuted copies of what its modules output"),
    "perceiver": ("refused", "latents attend to the input (no token x token map); no input ids"),
    # the tiny model's own eager forward does not run, or a family not read yet
    "pegasus_x": ("no reference", "its tiny forward fails (KeyError 0)"),
    "zamba2": ("no reference", "its tiny forward fails (KeyError 1)"),
}
# configs that do not build tiny here (the "not a text model" ones are skipped as such)
NOT_BUILT = {
    "cohere_compass_text", "dbrx", "dots1", "dots3_note_text",
    "gemma3n_text", "gemma4_assistant",
    "gemma4_unified_assistant", "musicgen",
    "musicgen_melody", "qwen4_exp_text", "zamba",
}  # fmt: skip


def expected(model_type: str) -> str:
    if model_type in NO_MAP:
        return "refused"
    if model_type in NOT_BUILT:
        return "not built"
    return KNOWN.get(model_type, ("right", ""))[0]


@pytest.mark.parametrize("model_type", list(ARCHITECTURES))
def test_every_map_equals_output_attentions(model_type):
    outcome = check(model_type)
    if outcome.status == "not built" and outcome.detail.startswith("not a text model"):
        pytest.skip(outcome.detail)
    assert outcome.status == expected(model_type), outcome.line()
    if model_type in NO_MAP:  # the message says why
        assert "no softmax" in outcome.detail or "output_attentions" in outcome.detail


def test_most_text_architectures_are_right():
    """The known lists stay small: at least 180 text architectures must be right."""

    def text(model_type: str) -> bool:
        try:
            built(model_type)
        except BuildError as exc:
            return not str(exc).startswith("not a text model")
        return True

    right = [t for t in ARCHITECTURES if expected(t) == "right" and text(t)]
    assert len(right) >= 180, len(right)


def test_a_family_read_from_its_outputs_keeps_no_weights_outside_a_capture(monkeypatch):
    """DeBERTa returns its weights only when asked: a plain pass keeps none, a trace reads them,
    and an input whose whole maps would pass ``MAX_MATERIALISE`` is refused before the pass."""
    model = HFModel.load(hf_spec(f"hf:{built('deberta')}"), "cpu")
    assert not model.lazy_capable
    with torch.no_grad():
        out = model.module(input_ids=torch.tensor([model.encode_text(TEXT)], device=model.device))
    assert out.attentions is None
    trace = model.trace(TEXT)
    assert trace.encoder.shape == (2, 4, len(trace.src_tokens), len(trace.src_tokens))
    monkeypatch.setattr(settings, "MAX_MATERIALISE", trace.encoder.size - 1)
    with pytest.raises(ValueError, match="Shorten the input to about"):
        model.trace(TEXT)
