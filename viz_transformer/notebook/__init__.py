"""Notebook widgets (anywidget) for Jupyter, VS Code, Colab and marimo: ``vt.head_view`` and
``vt.model_view``. A peer of ``ui/`` for notebooks: they import records, analysis and figures,
never Streamlit; their JavaScript ships in ``static/``. The widget stack is optional
(``pip install -r requirements-notebook.txt``): this module imports it only when a view is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_transformer.notebook.payload import checked
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace

if TYPE_CHECKING:
    from viz_transformer.notebook.widgets import HeadView, ModelView

INSTALL = "pip install -r requirements-notebook.txt"


def _widgets():
    try:
        from viz_transformer.notebook import widgets
    except ImportError as err:
        raise ImportError(
            f"The notebook widgets need anywidget and ipywidgets ({err.name} is missing): {INSTALL}"
        ) from err
    return widgets


def head_view(
    trace: Trace, kind: AttentionKind | None = None, layer: int = 0, head: int = 0
) -> HeadView:
    """BertViz's head view of a trace as a two-way widget: every head of a layer as lines from
    queries (left) to keys (right), coloured by head, and every head of the kind as small maps.
    A click selects a head (``widget.kind``, ``.layer``, ``.head`` change in Python and
    ``widget.observe`` fires); setting them in Python redraws it.

    Args:
        trace: from ``vt.trace``; kind: ``"encoder"``, ``"decoder"`` or ``"cross"`` (None: the
            first the trace has); layer, head: selected first, counted from 0.

    Raises:
        TypeError: ``trace`` is not a ``Trace``.
        ValueError: a kind the trace lacks, or a layer or head not an int in range (the
            message names the argument: ``layer must be an int from 0 to 5, got '1'``).
        ImportError: the notebook stack is not installed (the message says how).
    """
    kind = checked(trace, kind, layer, head)
    return _widgets().HeadView(trace, kind, int(layer), int(head))


def model_view(
    trace: Trace, kind: AttentionKind | None = None, layer: int = 0, head: int = 0
) -> ModelView:
    """Every layer x head of a trace's attention kind as a small map (block maxima); a click
    selects one, which is drawn large beside them. The same traits as ``head_view``.

    Raises:
        TypeError: ``trace`` is not a ``Trace``.
        ValueError: a kind the trace lacks, or a layer or head not an int in range (the
            message names the argument: ``layer must be an int from 0 to 5, got '1'``).
        ImportError: the notebook stack is not installed (the message says how).
    """
    kind = checked(trace, kind, layer, head)
    return _widgets().ModelView(trace, kind, int(layer), int(head))


__all__ = ["head_view", "model_view"]
