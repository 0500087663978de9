"""Sampling on the step-by-step decoder: temperature 0 is the greedy decoding, a seed reproduces a
draw, and chat wraps the prompt in the model's chat template (tiny random Llama with grouped-query
attention, and GPT-2). The filtered distribution itself: tests/unit/test_sampling.py."""

from __future__ import annotations

import numpy as np
import pytest

from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.analysis.sampling import Sampling, sample_steps
from viz_transformer.testing.hf import TEXT

TEMPLATE = "{% for m in messages %}<s>{{ m['content'] }}</s>{% endfor %}<s>the"


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_temperature_zero_is_the_greedy_decoding(load_tiny, family):
    model = load_tiny(family)
    greedy = decode_steps(model, TEXT, max_steps=12)
    sampled = sample_steps(model, TEXT, max_steps=12)
    assert sampled.output_ids == greedy.output_ids
    for a, b in zip(sampled.steps, greedy.steps, strict=True):
        assert a.input_tokens == b.input_tokens and a.top_ids == b.top_ids
        np.testing.assert_array_equal(a.self_row, b.self_row)


def test_a_seed_reproduces_a_draw_and_draws_stay_in_the_kept_set(load_tiny):
    model = load_tiny("llama")
    hot = Sampling(temperature=1.5, top_k=3, seed=1)
    first = sample_steps(model, TEXT, 10, hot)
    assert sample_steps(model, TEXT, 10, hot).output_ids == first.output_ids
    draws = {sample_steps(model, TEXT, 10, Sampling(1.5, 3, 1.0, s)).output_ids for s in range(6)}
    assert len(draws) > 1  # other seeds draw other tokens
    for step in first.steps:
        assert step.chosen_id in step.top_ids[:3]  # top-k 3: only the three most likely


def test_chat_wraps_the_prompt_in_the_chat_template(load_tiny):
    model = load_tiny("llama")
    with pytest.raises(ValueError, match="no chat template: turn chat off"):
        sample_steps(model, TEXT, 3, chat=True)
    model.tokenizer.chat_template = TEMPLATE
    try:
        assert model.chat_prompt("a cat") == "<s>a cat</s><s>the"
        dec = sample_steps(model, "a cat", 3, chat=True)
        # "the" right after the template's "<s>" (no "▁"): after a special token a piece starts
        # a word, the next one continues it
        assert dec.start_tokens[-2:] == ("t", "##he") and "</s>" in dec.start_tokens
        assert dec.start_tokens.count("<s>") >= 2  # the template's, besides the BOS
    finally:
        model.tokenizer.chat_template = None


def test_bad_options_get_a_message(load_tiny):
    model = load_tiny("llama")
    with pytest.raises(ValueError, match=r"top-p 0.0 must lie in \(0, 1\]"):
        sample_steps(model, TEXT, 3, Sampling(1.0, 0, 0.0))
    with pytest.raises(ValueError, match="0 or more"):
        sample_steps(model, TEXT, 3, Sampling(-1.0))
