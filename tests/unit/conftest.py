"""Fixtures of the unit tier (the whole suite's are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from viz_transformer.testing.projections import Kept, output_projections, recording


@pytest.fixture
def captured() -> Callable[..., tuple[object, list[Kept]]]:
    """``captured(model, text, kind)``: ``walkthrough.capture``'s record of ``kind`` and each
    layer's output projection's input and output, recorded by hooks of the test's own
    (``testing.projections``) while it ran."""
    from viz_transformer.analysis import walkthrough

    def capture(model, text: str, kind: str) -> tuple[object, list[Kept]]:
        with recording(output_projections(model, kind)) as kept:
            record = walkthrough.capture(model, text, kind)
        return record, kept

    return capture
