"""Lazy public names (PEP 562) for a package, from one list: the package's own
``if TYPE_CHECKING:`` imports.

A package writes its public names once, as the imports a type checker and an editor read, and
ends with ``__getattr__, __dir__, __all__, LAZY = exports.lazy(__name__, __file__)``. Nothing of
them is imported until a name is first read (so ``import viz_transformer`` loads no PyTorch and
``python -m viz_transformer class ...`` starts without it); ``__all__`` and ``LAZY`` are
derived from the same block, so there is no second list to fall behind.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Getattr = Callable[[str], Any]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def names(package: str, source: str) -> dict[str, tuple[str, str]]:
    """Public name -> ``(module, attribute)`` from the ``from M import a as b`` statements under
    ``if TYPE_CHECKING:`` of ``source`` (the text of ``package``'s ``__init__.py``).

    Raises:
        ValueError: no such block, or a name imported twice.
    """
    blocks = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and _is_type_checking(node.test)
    ]
    if not blocks:
        raise ValueError(f"{package}: no `if TYPE_CHECKING:` block names its public API.")
    out: dict[str, tuple[str, str]] = {}
    for node in (n for block in blocks for n in block.body):
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
        module = f"{base}.{node.module}" if node.level else node.module
        for alias in node.names:
            public = alias.asname or alias.name
            if public in out:
                raise ValueError(f"{package}: {public} is imported twice for its public API.")
            out[public] = (module, alias.name)
    return out


def lazy(package: str, init_file: str) -> tuple[Getattr, Callable[[], list[str]], list[str], dict]:
    """``(__getattr__, __dir__, __all__, LAZY)`` for ``package``, whose ``__init__.py`` is
    ``init_file``: ``LAZY`` maps each public name to ``(module, attribute)``, and the first read
    of a name imports its module and keeps the value in the package."""
    table = names(package, Path(init_file).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = table[name]
        value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__, sorted(table), table
