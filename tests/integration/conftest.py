"""Fixtures of the integration tier: tiny Hugging Face models loaded through the registry."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import viz_transformer as vt
from viz_transformer.testing.hf import BUILDERS


@pytest.fixture(scope="module")
def load_tiny(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], vt.LoadedModel]:
    """``load_tiny(family)``: the tiny ``family`` model, built once per test module and loaded as
    ``hf:<folder>`` (Marian keeps its model in a subfolder)."""
    root = tmp_path_factory.mktemp("tiny-hf")

    def load(family: str) -> vt.LoadedModel:
        path = root / family
        if not path.exists():
            BUILDERS[family](path)
        return vt.load_model(f"hf:{path / 'model' if family == 'marian' else path}")

    return load
