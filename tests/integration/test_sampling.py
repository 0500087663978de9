"""Sampling on the step-by-step decoder: the filtered distribution equals transformers' warpers,
temperature 0 is the greedy decoding, a seed reproduces a draw, and chat wraps the prompt in the
model's chat template (tiny random Llama with grouped-query attention, and GPT-2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.analysis.sampling import Sampling, next_token_probs, sample_steps
from viz_transformer.testing.hf import TEXT

TEMPLATE = "{% for m in messages %}<s>{{ m['content'] }}</s>{% endfor %}<s>the"


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"),
    [(1.0, 0, 1.0), (0.7, 5, 1.0), (1.3, 0, 0.9), (0.5, 20, 0.6), (2.0, 3, 0.05)],
)
def test_the_filtered_distribution_equals_transformers_warpers(temperature, top_k, top_p):
    gen = torch.Generator(device="cpu").manual_seed(0)
    logits = torch.randn(1, 500, generator=gen, device="cpu") * 3
    logits[0, 7] = float("-inf")  # a forbidden token stays forbidden
    warped = TemperatureLogitsWarper(temperature)(None, logits.clone())
    if top_k:
        warped = TopKLogitsWarper(top_k)(None, warped)
    if top_p < 1:
        warped = TopPLogitsWarper(top_p)(None, warped)
    want = torch.softmax(warped, -1)[0].double().numpy()
    logprobs = torch.log_softmax(logits, -1)[0].numpy()
    got = next_token_probs(logprobs, Sampling(temperature, top_k, top_p))
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert got[7] == 0 and abs(got.sum() - 1) < 1e-9


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
