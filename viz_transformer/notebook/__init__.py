"""Notebook widgets (anywidget) for Jupyter, VS Code, Colab and marimo: ``vt.head_view`` and
``vt.model_view``. A peer of ``ui/`` for notebooks: they import records, analysis and figures,
never Streamlit; their JavaScript ships in ``static/``. The widget stack is optional
(``pip install -r requirements-notebook.txt``): this module imports it only when a view is made.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from viz_transformer.notebook.payload import checked, cuts
from viz_transformer.notebook.plotly_offline import HTML_TEMPLATE, offline_figures
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace

if TYPE_CHECKING:
    from viz_transformer.notebook.widgets import HeadView, ModelView

# as a library, or in the repository (its lock)
INSTALL = "pip install 'viz-transformer[notebook]' (here: pip install -r requirements-notebook.txt)"


def _widgets():
    try:
        from viz_transformer.notebook import widgets
    except ImportError as err:
        raise ImportError(
            f"The notebook widgets need anywidget and ipywidgets ({err.name} is missing): {INSTALL}"
        ) from err
    return widgets


class TruncatedInputWarning(UserWarning):
    """A view of a trace whose input was cut to what the model reads."""


def warn_cut(trace: Trace) -> None:
    """Warn (``TruncatedInputWarning``, at the caller's line) for each part of the input the
    trace says was cut: the view shows only what the model read."""
    for side, text in cuts(trace).items():
        what = "target" if side == "tgt" else "input"
        warnings.warn(
            f"{trace.model_name}: the view shows the {what}'s {text}.",
            TruncatedInputWarning,
            stacklevel=3,
        )


def head_view(
    trace: Trace,
    kind: AttentionKind | None = None,
    layer: int = 0,
    head: int = 0,
    model: Any = None,
    text: str | None = None,
) -> HeadView:
    """BertViz's head view of a trace as a two-way widget: every head of a layer as lines from
    queries (left) to keys (right), coloured by head, and every head of the kind as small maps.
    A click selects a head (``widget.kind``, ``.layer``, ``.head`` change in Python and
    ``widget.observe`` fires); setting them in Python redraws it.

    Args:
        trace: from ``vt.trace``; kind: ``"encoder"``, ``"decoder"`` or ``"cross"`` (None: the
            first the trace has); layer, head: selected first, counted from 0; model, text:
            the model and text the trace came from, for the query-key panel (a selected
            query's scores on its strongest keys split by dimension, as ``vt.score_parts``).

    Warns:
        TruncatedInputWarning: the trace's input was cut (its header says so too).

    Raises:
        TypeError: ``trace`` is not a ``Trace``.
        ValueError: a kind the trace lacks, or a layer or head not an int in range (the
            message names the argument: ``layer must be an int from 0 to 5, got '1'``).
        ImportError: the notebook stack is not installed (the message says how).
    """
    kind = checked(trace, kind, layer, head)
    warn_cut(trace)
    if (model is None) != (text is None):
        raise ValueError("model and text go together: the model and the text the trace came from")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"text must be the str the trace came from, got {type(text).__name__}")
    return _widgets().HeadView(trace, kind, int(layer), int(head), model=model, text=text)


def model_view(
    trace: Trace, kind: AttentionKind | None = None, layer: int = 0, head: int = 0
) -> ModelView:
    """Every layer x head of a trace's attention kind as a small map (block maxima); a click
    selects one, which is drawn large beside them. The same traits as ``head_view``.

    Warns:
        TruncatedInputWarning: the trace's input was cut (its header says so too).

    Raises:
        TypeError: ``trace`` is not a ``Trace``.
        ValueError: a kind the trace lacks, or a layer or head not an int in range (the
            message names the argument: ``layer must be an int from 0 to 5, got '1'``).
        ImportError: the notebook stack is not installed (the message says how).
    """
    kind = checked(trace, kind, layer, head)
    warn_cut(trace)
    return _widgets().ModelView(trace, kind, int(layer), int(head))


__all__ = ["HTML_TEMPLATE", "TruncatedInputWarning", "head_view", "model_view", "offline_figures"]
