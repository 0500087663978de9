"""``check_dtype``: the dtypes a model loads in, by name or torch dtype, ``VT_DTYPE`` as the
default, and one message for anything else."""

from __future__ import annotations

import pytest
import torch

from viz_transformer import settings
from viz_transformer.models.devices import DTYPES, check_dtype, dtype_name


@pytest.mark.parametrize("name", ["float32", "bfloat16", "float16", " BFloat16 "])
def test_a_name_gives_its_torch_dtype_and_back(name: str) -> None:
    dtype = check_dtype(name)
    assert dtype is DTYPES[name.strip().lower()]
    assert dtype_name(dtype) == name.strip().lower()
    assert check_dtype(dtype) is dtype


def test_unset_is_float32_and_vt_dtype_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "DTYPE", None)
    assert check_dtype(None) is torch.float32
    monkeypatch.setattr(settings, "DTYPE", "bfloat16")
    assert check_dtype(None) is torch.bfloat16
    assert check_dtype("float32") is torch.float32  # an explicit dtype wins over VT_DTYPE


@pytest.mark.parametrize("bad", ["float64", "int8", "bf16x", torch.float64])
def test_any_other_dtype_says_which_exist(bad: object) -> None:
    with pytest.raises(ValueError, match="float32, bfloat16, float16"):
        check_dtype(bad)  # type: ignore[arg-type]


def test_a_bad_vt_dtype_is_named_in_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "DTYPE", "half-ish")
    with pytest.raises(ValueError, match="VT_DTYPE=half-ish"):
        check_dtype(None)
