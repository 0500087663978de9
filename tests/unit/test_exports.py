"""A package's public names come from one list, its ``if TYPE_CHECKING:`` imports
(``viz_transformer.exports``): ``__all__`` and the lazy table are derived from it, a name is
imported on first read only, and a second list cannot fall behind."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import viz_transformer
from viz_transformer import course, exports

ROOT = Path(__file__).resolve().parents[2]

SOURCE = textwrap.dedent(
    """
    from typing import TYPE_CHECKING
    import typing

    if TYPE_CHECKING:
        from viz_transformer.records.kinds import KINDS, head_label as label
        from .trace import Trace
        from ..settings import LAZY_ABOVE
    if typing.TYPE_CHECKING:
        import numpy
        from viz_transformer.records.progress import StopToken
    from viz_transformer.records.bounded import BoundedCache  # eager: not public
    """
)


def test_the_names_are_read_from_the_type_checking_block_with_their_modules():
    table = exports.names("viz_transformer.records", SOURCE)
    assert table == {
        "KINDS": ("viz_transformer.records.kinds", "KINDS"),
        "label": ("viz_transformer.records.kinds", "head_label"),
        "Trace": ("viz_transformer.records.trace", "Trace"),
        "LAZY_ABOVE": ("viz_transformer.settings", "LAZY_ABOVE"),
        "StopToken": ("viz_transformer.records.progress", "StopToken"),
    }


def test_a_name_twice_or_no_block_is_refused_with_the_package_named():
    with pytest.raises(ValueError, match="pkg: KINDS is imported twice"):
        exports.names("pkg", SOURCE + "if TYPE_CHECKING:\n    from a import KINDS\n")
    with pytest.raises(ValueError, match="pkg: no `if TYPE_CHECKING:` block"):
        exports.names("pkg", "import os\n")


@pytest.mark.parametrize("package", [viz_transformer, course])
def test_all_is_the_block_and_every_name_loads_the_object_it_names(package):
    init = Path(package.__file__)
    tree = ast.parse(init.read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If))
    imported = {a.asname or a.name for n in block.body for a in n.names}
    assert set(package.__all__) == imported == set(package.LAZY)
    assert set(package.__all__) <= set(dir(package))
    for name in ("Lesson", "load_lesson") if package is course else ("Trace", "hooks"):
        module, attribute = package.LAZY[name]
        assert getattr(package, name) is getattr(__import__(module, fromlist=["_"]), attribute)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        package.no_such_name  # noqa: B018


def test_an_alias_reads_the_attribute_under_its_own_name():
    from viz_transformer.analysis.retrieval.api import compare_forms

    assert viz_transformer.compare_retrieval is compare_forms
