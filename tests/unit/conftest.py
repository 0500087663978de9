"""Fixtures of the unit tier: a tiny random paper model offered by name (lessons name their
model) and the class store's databases."""

from __future__ import annotations

from dataclasses import replace

import pytest

from viz_transformer.models.paper import PaperModel
from viz_transformer.models.registry import forget_memory_models, offer_memory_model
from viz_transformer.testing.paper import tiny_paper_model

LESSON_MODEL = "lesson-tiny"


@pytest.fixture(scope="session")
def lesson_model() -> PaperModel:
    """A tiny random paper model (seed 3, 12 positions) that ``vt.load_model("lesson-tiny")``
    returns while the session lasts, so a lesson file can name it."""
    tiny = tiny_paper_model(seed=3, max_len=12)
    tiny = replace(tiny, spec=replace(tiny.spec, name=LESSON_MODEL))
    offer_memory_model(tiny)
    yield tiny
    forget_memory_models(LESSON_MODEL)
