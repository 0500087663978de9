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

from viz_transformer.testing.architecture_check import check
from viz_transformer.testing.architectures import ARCHITECTURES

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
    # the attention formula read from the call (another change): per call, sinks, windows
    "albert": ("wrong", "one attention module run in every layer: the long path keeps one layer"),
    "diffllama": ("wrong", "two maps per layer: the long path shows four layers of two"),
    "hrm_text": ("wrong", "modules run many times per pass"),
    "modernbert": ("wrong", "the local window is ignored on the long path"),
    "nllb-moe": ("wrong", "the long path differs by 2e-4"),
    "inkling_text": ("wrong", "the long path differs (sliding-window heads)"),
    "gpt_oss": ("refused", "attention sinks: rows sum below 1, refused as scores"),
    "flint": ("refused", "attention sinks: rows sum below 1, refused as scores"),
    "hy_v4": ("refused", "attention sinks: rows sum below 1, refused as scores"),
    "mimo_v2_flash": ("refused", "attention sinks: rows sum below 1, refused as scores"),
    "inkling2_text": ("refused", "attention sinks: rows sum below 1, refused as scores"),
    "deepseek_v4": ("refused", "maps of several shapes in one stack (compressed keys)"),
    "minimax": ("refused", "linear-attention layers' outputs are no softmax maps"),
    # weights returned (not declared) in a form that is no query x key softmax map
    "cpmant": ("refused", "returned rows do not sum to 1"),
    "prophetnet": ("refused", "returned encoder rows do not sum to 1"),
    "squeezebert": ("refused", "returned rows do not sum to 1"),
    "led": ("refused", "local attention returned in bands of keys"),
    "longformer": ("refused", "local attention returned in bands of keys"),
    "longt5": ("refused", "local attention returned in blocks"),
    "xlnet": ("refused", "returned maps are permuted copies of what its modules output"),
    "perceiver": ("refused", "its tiny model does not run with output_attentions"),
    # hybrids whose 2 tiny layers hold no attention layer
    "bamba": ("refused", "no attention layer among the tiny model's layers"),
    "granitemoehybrid": ("refused", "no attention layer among the tiny model's layers"),
    "recurrent_gemma": ("refused", "no attention layer among the tiny model's layers"),
    # the loader
    "funnel": ("crash", "two model classes for one config"),
    "llama4_text": ("crash", "no last_hidden_state in the base model's output"),
    "bigbird_pegasus": ("crash", "the block-sparse encoder runs no attention function"),
    "t5gemma2": ("crash", "a vision tower's modules taken for the encoder's"),
    "t5gemma": ("refused", "its tiny checkpoint does not load back"),
    "vibevoice_asr": ("refused", "a speech model: no auto class for text"),
    # the tiny model's own eager forward does not run or gives no weights
    "big_bird": ("no reference", "block-sparse attention returns no weights"),
    "blt": ("no reference", "its patcher's sizes are not shrunk"),
    "deepseek_v2": ("no reference", "its router needs a top-k the tiny config lacks"),
    "pegasus_x": ("no reference", "its block size and the tiny input"),
    "zamba2": ("no reference", "its mamba sizes are not shrunk"),
}
# configs that do not build tiny here (the "not a text model" ones are skipped as such)
NOT_BUILT = {
    "cohere_compass_text", "dbrx", "dots1", "dots3_note_text", "esm", "falcon_h1",
    "gemma3n_text", "gemma4", "gemma4_assistant", "gemma4_text", "gemma4_unified",
    "gemma4_unified_assistant", "gemma4_unified_text", "lfm2_moe", "musicgen",
    "musicgen_melody", "neomme", "qwen4_exp_text", "zamba",
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
    """The known lists stay small: most architectures must be right on both paths."""
    right = [t for t in ARCHITECTURES if expected(t) == "right"]
    assert len(right) >= 130, len(right)
