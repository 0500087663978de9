"""The folders show the architecture and imports point one way (parsed with ``ast``).

pages -> ui -> figures -> analysis -> models -> {networks, records, text} -> settings; training
sits beside analysis. A module's rank comes from its folder, so a new module needs no edit here.
Every import counts, also those inside functions or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "viz_transformer"
# folder (or module) directly under viz_transformer/ -> rank; a module may import only modules of
# the same or a lower rank, and never one that imports it back
RANK = {
    "settings": 0, "exports": 0,  # every limit; the lazy public names of a package
    "networks": 1, "records": 1, "text": 1,
    "models": 2,
    "analysis": 3, "training": 3,
    "course": 3,  # the course engine and its lessons (YAML): analysis-level, no figures or ui
    "testing": 3,  # random-weight fixtures for tests and bench; nothing of the library imports them
    "": 4,  # viz_transformer/__init__.py: the public API (vt.load_model, vt.trace, ...)
    "__main__": 4, "cli": 4,  # python -m viz_transformer COMMAND: beside the public API
    "serve": 4,  # replicas behind HAProxy: a process supervisor, no page code
    "classroom": 4,  # the class store (SQLAlchemy): grades through the course, no Streamlit
    "figures": 5,
    "ui": 6,
    "notebook": 6,  # the notebook widgets (anywidget): a peer of ui/ for Jupyter, no Streamlit
}  # fmt: skip
# what the public API (rank 4) names from above it, only inside its PEP 562 ``__getattr__``
LAZY_API = {"viz_transformer.notebook"}
APP_RANK = 7  # app.py and pages/
ONLY_SETTINGS = {"networks"}  # torch modules with hook points import nothing else of ours
STREAMLIT_OK = ("viz_transformer.ui", "app", "pages")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _sources() -> dict[str, Path]:
    files = [*ROOT.glob(f"{PACKAGE}/**/*.py"), ROOT / "app.py", *ROOT.glob("pages/**/*.py")]
    return {_module_name(f): f for f in files}


SOURCES = _sources()


def _folder(module: str) -> str:
    """The folder (or top-level module) under viz_transformer/ that ranks ``module``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _rank(module: str) -> int:
    if module == "app" or module.startswith("pages"):
        return APP_RANK
    folder = _folder(module)
    if folder not in RANK:
        raise AssertionError(
            f"{module} lies in no known layer: put it in one of the folders of "
            f"{PACKAGE}/ ({', '.join(sorted(k for k in RANK if k))})."
        )
    return RANK[folder]


def _resolve(module: str, name: str) -> str:
    """``from module import name`` imports the submodule ``module.name`` when there is one."""
    full = f"{module}.{name}"
    return full if full in SOURCES else module


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of this file's syntax tree (parsed once per run: several checks read it)."""
    return tuple(ast.walk(ast.parse(path.read_text())))


def _imports(path: Path) -> set[str]:
    """Every module this file imports, at any depth of the syntax tree."""
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: use absolute imports (from {PACKAGE}....)")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] == PACKAGE:
                found |= {_resolve(node.module, a.name) for a in node.names}
            else:
                found.add(node.module)
    return found


def _own(imported: str) -> str | None:
    """The module of ours that ``imported`` names (a package import names its __init__)."""
    while imported and imported not in SOURCES:
        imported = imported.rpartition(".")[0]
    return imported or None


GRAPH = {
    name: {o for i in _imports(path) if (o := _own(i)) and o != name}
    for name, path in SOURCES.items()
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_imports_point_down_the_layers(name):
    own = _rank(name)
    for imported in _imports(SOURCES[name]):
        top = imported.split(".")[0]
        if top == "streamlit":
            assert name.startswith(STREAMLIT_OK), (
                f"{name} imports streamlit; only viz_transformer/ui/, app.py and pages/ may."
            )
    for target in GRAPH[name]:
        if name == PACKAGE and target in LAZY_API:
            continue  # only under TYPE_CHECKING: test_the_public_api_names_lazily_only_what_it_may
        assert _rank(target) <= own, f"{name} (rank {own}) imports {target} ({_rank(target)})"
        if _folder(name) in ONLY_SETTINGS and name.startswith(PACKAGE):
            assert _folder(target) in {_folder(name), "settings"}, (
                f"{name} is a network: it may import only networks and settings, not {target}"
            )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_public_api_names_lazily_only_what_it_may():
    """``vt.LAZY`` (names loaded on first use) points down the layers too, except the notebook
    widgets (``LAZY_API``), which the API names but never imports when it is imported."""
    import viz_transformer

    for name, (module, _) in viz_transformer.LAZY.items():
        assert module in SOURCES, f"vt.{name}: no module {module}"
        assert _rank(module) <= RANK[""] or module in LAZY_API, f"vt.{name} -> {module}"
    tree = ast.parse((ROOT / PACKAGE / "__init__.py").read_text())
    for node in tree.body:  # at import time: not under ``if TYPE_CHECKING``
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not {_resolve(node.module, a.name) for a in node.names} & LAZY_API


def test_the_library_and_the_app_never_import_the_test_fixtures():
    users = sorted(n for n, deps in GRAPH.items() if _folder(n) != "testing" and any(
        _folder(d) == "testing" and d.startswith(PACKAGE) for d in deps
    ))  # fmt: skip
    assert not users, f"only tests and bench may import {PACKAGE}.testing: {users}"


def test_analysis_asks_the_model_and_never_reaches_into_a_network():
    """What differs between families is a ``LoadedModel`` method or its record, so analysis
    needs no network's layout, hook names or decoding (``model.hooked``, ``model.recording``,
    ``model.qkv_run``)."""
    reaching = sorted(
        f"{n} -> {d}"
        for n, deps in GRAPH.items()
        if _folder(n) == "analysis"
        for d in deps
        if _folder(d) == "networks"
    )
    assert not reaching, f"analysis imports networks/: {reaching}"


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_library_has_no_loose_modules():
    loose = {n for n in SOURCES if n.startswith(PACKAGE) and _folder(n) not in RANK}
    assert not loose, f"put these in a folder of {PACKAGE}/: {sorted(loose)}"
    assert len(SOURCES) >= 40


def test_tests_import_no_other_test_file_or_bench():
    """Shared helpers are fixtures in a tier's conftest.py; shared builders are library code."""
    for path in ROOT.glob("tests/**/*.py"):
        for imported in _imports(path):
            top = imported.split(".")[0]
            assert top not in {"tests", "bench", "conftest"}, f"{path.name} imports {imported}"


def _bench_imports(path: Path) -> set[str]:
    """The ``bench.*`` modules this file imports (``from bench import x`` names ``bench.x``)."""
    found: set[str] = set()
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bench.")}
        elif isinstance(node, ast.ImportFrom) and node.module == "bench":
            found |= {f"bench.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench."):
            found.add(node.module)
    return found


def test_bench_holds_scripts_at_the_top_and_nothing_imports_a_script():
    """bench/ is benchmarks: each top-level module is a script (run as ``python bench/x.py``);
    what scripts share lies in ``bench/harness/``, so no file (script, harness, tooling, test)
    imports a script, and a script's helpers cannot drift into being another script's API."""
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py") if p.name != "__init__.py"}
    for name in scripts:
        text = (ROOT / "bench" / f"{name}.py").read_text()
        assert '__name__ == "__main__"' in text, (
            f"bench/{name}.py is no script: move it to harness/"
        )
    for path in [*ROOT.glob("bench/**/*.py"), *ROOT.glob("tests/**/*.py")]:
        for imported in _bench_imports(path):
            top = imported.split(".")[1]
            assert top not in scripts, f"{path.relative_to(ROOT)} imports the script {imported}"


@pytest.mark.parametrize(
    "folder", ["viz_transformer/ui", "viz_transformer/course", "bench/harness", "bench/tooling"]
)
def test_docs_architecture_names_every_module_of_a_folder(folder):
    """The folder's row of docs/architecture.md names each of its files as `name.py` (the ui/
    row once missed four); a new module is listed where a newcomer looks."""
    row = _docs_row(folder)
    missing = [
        p.name
        for p in sorted((ROOT / folder).iterdir())
        if p.suffix == ".py" and f"`{p.name}`" not in row
    ]
    assert not missing, f"docs/architecture.md's {folder}/ row lacks {missing}"


def _docs_row(folder: str) -> str:
    """The text of the Folders table's row of ``folder`` (a subfolder: its part of the parent's
    row, from its name to the closing parenthesis that ends its list)."""
    lines = (ROOT / "docs" / "architecture.md").read_text().splitlines()
    own = [line for line in lines if line.startswith(f"| `{folder}/` |")]
    if own:
        return own[0]
    parent, name = folder.rsplit("/", 1)
    text = _docs_row(parent)
    start, depth = text.index(f"`{name}/` ("), 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if text[end] == ")" and depth == 0:
            return text[start:end]
    return text[start:]
