"""The validators' interfaces: what a question kind's row (``question_kinds.QUESTION_KINDS``) may
call to report a problem, in the lesson file (``ShapeCheck``, implemented by ``shape.py``) and on
the lesson's model (``ModelCheck``, implemented by ``validation.py``). A row says what to check;
these say how a problem is reported, so the kinds table needs neither validator."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from viz_transformer.course.located import Path_


class ShapeCheck(Protocol):
    """What a kind's shape check may call (``shape._Shape``): problems located in the file."""

    def add(self, path: Path_, message: str) -> None:
        """Report ``message`` at the line of ``path``."""

    def keys(self, data: Any, path: Path_, known: Mapping[str, bool], what: str) -> bool:
        """Report unknown and missing fields of ``data`` (``known``: field -> required)."""

    def fields(self, args: dict, path: Path_) -> None:
        """Report fields of a wrong type or range (indices, texts, layers, tolerance, options)."""


class ModelCheck(Protocol):
    """What a kind's model check may call (``validation._ModelValidation``)."""

    def attention(self, args: Mapping[str, Any], path: Path_) -> None:
        """Report an unreadable ``sentence``, an ``attention`` kind the model does not record,
        and a ``layer``, ``head``, ``query``, ``key`` or ``layers`` entry it does not have."""

    def decoder_step(self, args: Mapping[str, Any], path: Path_) -> None:
        """Report an unreadable ``sentence`` and a ``step`` beyond the decoder's input."""

    def course(self, quantity: str, args: Mapping[str, Any], path: Path_) -> None:
        """Report what keeps a course quantity (``quantities``) from a value on the model."""
