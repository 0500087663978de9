"""Fixtures of the unit tier: a tiny random paper model offered by name (lessons name their
model) and the class store's databases."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from viz_transformer.models.paper import PaperModel
from viz_transformer.models.registry import forget_memory_models, offer_memory_model
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.postgres import postgres_bin, temporary_postgres

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


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL server of its own for the session (``testing.postgres``). Skipped where
    PostgreSQL is not installed, except on CI (``CI=true``), where that fails: install Debian's
    ``postgresql``."""
    if postgres_bin() is None:
        message = "PostgreSQL is not installed (apt-get install -y postgresql)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    with temporary_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh SQLite file, or the session's PostgreSQL server: the class store's tests run on
    both engines."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    return request.getfixturevalue("postgres_url")
