"""The mask ``"vt"`` hands a model (``hf.calls``): a predicate that takes no ``T x T`` memory,
reads as eager's mask row by row, and becomes eager's dense mask the moment the model's own code
touches it; None only where SDPA needs no mask."""

from __future__ import annotations

import numpy as np
import torch
from transformers.masking_utils import (
    causal_mask_function,
    eager_mask,
    sliding_window_causal_mask_function,
)

from viz_transformer.models.hf.calls import RuleMask, mask_rows, rule_mask

N = 9


def _kwargs(fn, padding: torch.Tensor | None = None, local: int | None = None) -> dict:
    return {
        "batch_size": 1 if padding is None else padding.shape[0],
        "q_length": N,
        "kv_length": N,
        "mask_function": fn,
        "attention_mask": padding,
        "allow_is_causal_skip": True,
        "local_size": local,
        "dtype": torch.float32,
        "device": "cpu",
    }


def test_a_window_mask_is_a_predicate_that_reads_as_eagers_mask():
    kwargs = _kwargs(sliding_window_causal_mask_function(3), local=3)
    mask = rule_mask(False, **kwargs)
    assert isinstance(mask, RuleMask) and mask.shape == (1, 1, N, N)
    with torch._C.DisableTorchFunctionSubclass():  # what it holds, not what it stands for
        assert mask.untyped_storage().nbytes() == 4  # one float: no N x N tensor behind it
    assert mask._dense is None
    want = eager_mask(**kwargs)
    rows = torch.tensor([0, 4, N - 1], device="cpu")
    np.testing.assert_array_equal(mask_rows(mask, rows, N, 1, torch.float32), want[:, :, rows])
    assert mask._dense is None  # rows come from the predicate
    scores = torch.zeros(1, 2, N, N, device="cpu")
    np.testing.assert_array_equal(scores + mask, scores + want)  # the model touches it: dense
    assert mask._dense is not None


def test_padding_joins_the_predicate_and_a_plain_causal_mask_is_left_to_sdpa():
    assert rule_mask(False, **_kwargs(causal_mask_function)) is None  # SDPA's is_causal
    padding = torch.tensor([[False, False, *[True] * (N - 2)]], device="cpu")
    kwargs = _kwargs(causal_mask_function, padding)
    mask = rule_mask(False, **kwargs)
    assert isinstance(mask, RuleMask)
    rows = torch.arange(N, device="cpu")
    np.testing.assert_array_equal(mask_rows(mask, rows, N, 1, torch.float32), eager_mask(**kwargs))
    dense = rule_mask(True, **kwargs)  # patterns asked: eager attention adds a dense mask
    assert not isinstance(dense, RuleMask) and dense.shape == (1, 1, N, N)
