"""The facts of a model in one place: what its attention kinds say about its architecture, the
layers and heads of each kind (equal to what it traces), and example inputs that suit it (that
every shipped model can patch its pair: tests/integration/test_shipped_models.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

import viz_transformer as vt
from viz_transformer.models.spec import swapped_words
from viz_transformer.training.tasks.catalog import TASKS

SHIPPED = [n for n in vt.available_models() if vt.model_info(n).family != "hf"]


@pytest.mark.parametrize(
    ("kinds", "architecture", "flags"),
    [
        (("encoder",), "encoder-only", (True, False, False, False)),
        (("decoder",), "decoder-only", (False, True, False, True)),
        (("encoder", "cross"), "encoder-decoder", (False, False, True, True)),  # Bergamot
        (("encoder", "decoder", "cross"), "encoder-decoder", (False, False, True, True)),
    ],
)
def test_the_kinds_a_model_shows_name_its_architecture(kinds, architecture, flags):
    spec = replace(vt.model_info("paper-reverse"), shows=kinds)
    assert spec.kinds == kinds and spec.architecture == architecture
    assert (spec.encoder_only, spec.decoder_only, spec.encoder_decoder, spec.has_decoder) == flags


def test_facts_of_a_loaded_model_agree_with_its_trace():
    model = vt.load_model("paper-reverse")
    facts = model.facts
    trace = vt.trace(model, facts.example)
    assert facts.kinds == ("encoder", "decoder", "cross") and facts.name == "paper-reverse"
    for kind in facts.kinds:
        assert facts.shape(kind) == model.attention_shape(kind) == trace.get(kind).shape[:2]
    assert facts.stacks == {"encoder": 2, "decoder": 2}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_a_retrained_task_model_keeps_the_shipped_pair(task):
    """Training writes the task's pair into meta.json, so retraining keeps what the app reads."""
    shipped = f"paper-{task}"
    assert TASKS[task].meta_examples() == {"examples": {"patching": list(TASKS[task].patching)}}
    if shipped in SHIPPED:
        assert vt.model_info(shipped).patch_pair == TASKS[task].patching


def test_a_model_without_a_pair_gets_its_example_with_two_words_swapped():
    spec = replace(vt.model_info("paper-reverse"), patching=None, example="happy king red ship")
    assert spec.patch_pair == ("happy king red ship", "happy ship red king")
    for text in ["The cat sat on the mat.", "It's the twenty-first, isn't it?", "21/11/2026"]:
        swapped = swapped_words(text)  # the same characters in another order
        assert swapped != text and Counter(swapped) == Counter(text)
    assert swapped_words("The cat sat on the mat.") == "The mat sat on the cat."
    assert swapped_words("the twenty-first of November 2026") == (
        "the November of twenty-first 2026"  # a hyphenated word stays one word
    )
