"""Loading in bfloat16 (``vt.load_model(..., dtype=...)``): the weights are bfloat16, the maps
still come out as float32 softmax rows from the captured queries and keys, close to the
float32 model's (T5's relative bias included: the tiles add it), and the analyses of a head run
on it. Models that cannot give float32 maps that way say so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.testing.hf import BUILDERS

TEXT = "the cat the cat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    root = tmp_path_factory.mktemp("dtype")

    def build(family: str) -> Path:
        path = root / family
        if not path.exists():
            BUILDERS[family](path)
        return path / "model" if family == "marian" else path

    return build


@pytest.mark.parametrize(("family", "kind"), [("llama", "decoder"), ("bert", "encoder"),
                                              ("marian", "cross"), ("t5", "encoder")])  # fmt: skip
def test_bfloat16_weights_give_float32_rows_close_to_float32(
    folder: Callable[[str], Path], family: str, kind: str
) -> None:
    name = f"hf:{folder(family)}"
    half, full = vt.load_model(name, "cpu", dtype="bfloat16"), vt.load_model(name, "cpu")
    assert half is not full and half is vt.load_model(name, "cpu", dtype=torch.bfloat16)
    assert half.module.dtype == torch.bfloat16 and full.module.dtype == torch.float32
    target = None if family not in ("marian", "t5") else "a b"
    a, b = half.trace(TEXT, target), full.trace(TEXT, target)
    assert isinstance(a.get(kind), LazyPatterns)  # softmax taken in float32 from q and k
    maps, reference = np.asarray(a.get(kind)), np.asarray(b.get(kind))
    assert maps.dtype == np.float32 and maps.shape == reference.shape
    rows = maps.sum(-1)
    np.testing.assert_allclose(rows[rows > 0], 1.0, atol=1e-5)  # a bf16 softmax: ~2e-3 off
    assert np.abs(maps - reference).max() < 0.05  # bfloat16 weights: 8 bits of mantissa


def test_a_head_is_taken_apart_on_a_bfloat16_model(folder: Callable[[str], Path]) -> None:
    model = vt.load_model(f"hf:{folder('llama')}", "cpu", dtype="bfloat16")
    score = float(vt.attention_scores(model, TEXT, "decoder", 1, 0)[3, 1])
    for by in ("dimension", "component"):
        parts = vt.score_parts(model, TEXT, "decoder", 1, 0, 3, 1, by=by)
        assert float(parts["value"].sum()) == pytest.approx(score, rel=1e-3, abs=1e-3)
    full = vt.load_model(f"hf:{folder('llama')}", "cpu")
    half, ref = (vt.head_writes(m, TEXT, "decoder", 1, 0, 3) for m in (model, full))
    logits = half.promoted["logit"].to_numpy()
    assert np.isfinite(logits).all() and (np.diff(logits) <= 0).all()
    np.testing.assert_allclose(logits, ref.promoted["logit"].to_numpy(), rtol=0.05, atol=0.02)


def test_models_that_cannot_give_float32_maps_say_so() -> None:
    with pytest.raises(ValueError, match="float32 only"):
        vt.load_model("paper-reverse", "cpu", dtype="bfloat16")
    with pytest.raises(ValueError, match="float32, bfloat16, float16"):
        vt.load_model("paper-reverse", "cpu", dtype="int8")
