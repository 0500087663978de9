"""Imports point one way: pages -> ui -> figures -> capture -> models -> hooks/config (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RANK = {  # a module may import only modules of the same or a lower rank
    "viz_transformer.config": 0, "viz_transformer.hooks": 0, "viz_transformer.positional": 0,
    "viz_transformer.vocab": 0, "viz_transformer.tasks": 0, "viz_transformer.record": 0,
    "viz_transformer.sp_vocab": 0, "viz_transformer.distill": 2, "viz_transformer.corpus_en_pt": 2,
    "viz_transformer.settings": 0, "viz_transformer.patterns": 0,
    "viz_transformer.models": 1,
    "viz_transformer.capture": 2, "viz_transformer.train": 2, "viz_transformer.export": 2,
    "viz_transformer.walkthrough": 2,
    "viz_transformer.decoding": 2, "viz_transformer.aggregate": 2, "viz_transformer.uploads": 2,
    "viz_transformer.softmax": 2, "viz_transformer.pe_analysis": 2,
    "viz_transformer": 3, "viz_transformer.figures": 3,
    "viz_transformer.ui": 4,
    "app": 5, "pages": 5,
}  # fmt: skip
STREAMLIT_OK = {"viz_transformer.ui", "app", "pages"}  # pages.* by prefix


def _rank(module: str) -> int:
    while module not in RANK:
        module = module.rpartition(".")[0]
        if not module:
            raise AssertionError("module outside the known layers")
    return RANK[module]


def _sources() -> list[tuple[str, Path]]:
    files = [*ROOT.glob("viz_transformer/**/*.py"), ROOT / "app.py", *ROOT.glob("pages/*.py")]
    out = []
    for f in files:
        parts = f.relative_to(ROOT).with_suffix("").parts
        name = ".".join(p for p in parts if p != "__init__")
        out.append((name, f))
    return out


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "viz_transformer":
            # `from viz_transformer import settings` imports the submodule, not the package API
            found |= {f"viz_transformer.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize(("name", "path"), _sources(), ids=[n for n, _ in _sources()])
def test_imports_point_down_the_layers(name, path):
    own = _rank(name)
    for imported in _imports(path):
        top = imported.split(".")[0]
        if top == "streamlit":
            assert name in STREAMLIT_OK or name.startswith("pages."), (
                f"{name} imports streamlit; only viz_transformer/ui.py, app.py and pages/ may."
            )
        if top == "viz_transformer":
            assert _rank(imported) <= own, f"{name} (layer {own}) imports {imported}"


def test_the_check_knows_every_module():
    assert len(_sources()) >= 12
