"""YAML read as plain data (``yaml.safe_load``'s types only) with the line of every value, so a
lesson's problems name ``FILE:LINE``.

The text is composed into nodes by PyYAML's safe loader and each scalar is built by its safe
constructor: tags that would build Python objects are refused, never run.
"""

from __future__ import annotations

from typing import Any

import yaml

_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
Path_ = tuple[str | int, ...]  # where a value lies: ("steps", 2, "check", "query")


class LocatedError(ValueError):
    """A YAML problem at a 1-based ``line`` (0 when the file has no line to blame)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line, self.message = line, message


def load_located(text: str) -> tuple[Any, dict[Path_, int]]:
    """Parse one YAML document into dicts, lists and scalars, and where each value starts.

    Args:
        text: the file's text.

    Returns:
        ``(data, lines)``: the data as ``yaml.safe_load`` gives it (None for an empty text) and
        ``lines[path]``, the 1-based line of the value at ``path`` (``()`` is the document).

    Raises:
        LocatedError: bad YAML, more than one document, a duplicate or non-scalar mapping key,
            or a tag the safe loader does not know (e.g. ``!!python/object``).
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[Path_, int] = {}
        data = _build(loader, node, (), lines) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        raise LocatedError(line, f"not valid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise LocatedError(0, f"not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    return data, lines


def line_of(lines: dict[Path_, int], path: Path_) -> int:
    """The line of the value at ``path``, or of its nearest enclosing value (0: none)."""
    while path not in lines and path:
        path = path[:-1]
    return lines.get(path, 0)


def _build(loader: yaml.SafeLoader, node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> Any:
    lines[path] = node.start_mark.line + 1
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_TAGS:
        raise LocatedError(lines[path], f"the tag {node.tag} is not allowed in a lesson")
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # merge keys (<<) as safe_load does
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise LocatedError(key_node.start_mark.line + 1, "a key must be plain text")
            key = loader.construct_object(key_node)
            if key in out:
                raise LocatedError(key_node.start_mark.line + 1, f"{key!r} is given twice")
            out[key] = _build(loader, value_node, (*path, key), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), lines) for i, item in enumerate(node.value)]
    return loader.construct_object(node)
