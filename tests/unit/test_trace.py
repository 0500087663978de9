"""Trace.validate catches every malformed record with a message that says how to fix it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.records.trace import Trace


def _uniform(layers: int, heads: int, q: int, k: int, causal: bool = False) -> np.ndarray:
    mask = np.tril(np.ones((q, k))) if causal else np.ones((q, k))
    return np.broadcast_to(mask / mask.sum(-1, keepdims=True), (layers, heads, q, k)).astype(
        np.float32
    )


def _good() -> Trace:
    return Trace(
        model_name="hand-made",
        src_tokens=("a", "b", "c", "</s>"),
        tgt_tokens=("<s>", "x", "y"),
        pred_tokens=("x", "y", "</s>"),
        encoder=_uniform(2, 3, 4, 4),
        decoder=_uniform(2, 3, 3, 3, causal=True),
        cross=_uniform(2, 3, 3, 4),
    )


def test_a_well_formed_trace_validates():
    assert _good().validate() is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"encoder": _uniform(2, 3, 5, 5)}, r"expected \[layers, heads, 4, 4\]"),
        ({"cross": _uniform(2, 3, 4, 3)}, r"expected \[layers, heads, 3, 4\]"),
        ({"encoder": _uniform(2, 3, 4, 4)[0]}, "has shape"),
        ({"encoder": _uniform(2, 3, 4, 4).astype(np.float64)}, "float64"),
        ({"decoder": _uniform(2, 3, 3, 3)}, "future positions"),
        ({"cross": _uniform(2, 3, 3, 4) * 1.01}, "pass softmax outputs"),
        ({"pred_tokens": ("x",)}, "one prediction per decoder input"),
    ],
)
def test_malformed_traces_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(_good(), **change).validate()


def test_nan_is_refused():
    enc = _uniform(2, 3, 4, 4).copy()
    enc[1, 2, 0, :] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        dataclasses.replace(_good(), encoder=enc).validate()


def test_trace_of_tiny_model_has_the_documented_layout(tiny):
    tr = vt.trace(tiny, "alpha beta gamma")
    assert tr.src_tokens == ("alpha", "beta", "gamma", "</s>")
    assert tr.tgt_tokens[0] == "<s>" and len(tr.pred_tokens) == len(tr.tgt_tokens)
    assert tr.encoder.shape == (2, 2, 4, 4)
    assert tr.decoder.shape == (2, 2, len(tr.tgt_tokens), len(tr.tgt_tokens))
    assert tr.cross.shape == (2, 2, len(tr.tgt_tokens), 4)
    forced = vt.trace(tiny, "alpha beta gamma", target="delta eta")
    assert forced.tgt_tokens == ("<s>", "delta", "eta") and forced.forced


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("   \n\t", "empty"), ("x" * 50_000, "limit"), ("alpha omega", "'omega'")],
)
def test_bad_text_gets_a_clear_message(tiny, text, message):
    with pytest.raises(ValueError, match=message):
        vt.trace(tiny, text)
