"""The next-token distribution of sampling (``analysis.sampling.next_token_probs``) equals
transformers' temperature, top-k and top-p warpers applied in the order ``generate`` applies them
(no model needed: random logits with a forbidden token)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

from viz_transformer.analysis.sampling import Sampling, next_token_probs


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


def test_temperature_zero_puts_all_the_mass_on_the_most_likely_token():
    logprobs = np.log([0.2, 0.5, 0.3])
    np.testing.assert_array_equal(next_token_probs(logprobs, Sampling()), [0.0, 1.0, 0.0])
