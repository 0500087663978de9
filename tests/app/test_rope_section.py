"""The positional page's rotary section: drawn for a rotary model, absent for the paper model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/positional_encoding.py"


def _titles(figs: list[dict]) -> list[str]:
    return [f["layout"].get("title", {}).get("text", "") for f in figs]


def test_rotary_model_gets_the_section(
    open_page: Callable[..., AppTest], figures: Callable, decode_array: Callable, tmp_path: Path
) -> None:
    at = open_page(PAGE, model=f"hf:{BUILDERS['llama'](tmp_path / 'llama')}")
    figs = figures(at)
    titles = _titles(figs)
    offsets = figs[next(i for i, t in enumerate(titles) if t.startswith("Score R_m q"))]
    rows = [decode_array(trace["y"]) for trace in offsets["data"]]
    assert len(rows) == 3 and all(np.allclose(r, rows[0], atol=1e-4) for r in rows)
    assert any(t.startswith("Rotation of each (q, k) pair") for t in titles)
    assert any("Rotary positions in" in s.value for s in at.subheader)


def test_paper_model_has_no_rotary_section(open_page: Callable[..., AppTest], figures) -> None:
    at = open_page(PAGE, model="paper-en-pt")
    assert not any(t.startswith("Score R_m q") for t in _titles(figures(at)))
