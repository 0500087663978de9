"""The notebooks in docs/notebooks/ are stored without outputs (tests/integration runs them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "docs" / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_are_there():
    names = [p.name for p in NOTEBOOKS]
    assert names == ["hf_heads.ipynb", "quickstart.ipynb", "why_a_head_attends.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_is_kept_without_outputs(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and nb["metadata"]["kernelspec"]["name"] == "python3"
    for cell in code:
        assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:80]
