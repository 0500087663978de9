"""The head view and the model view as anywidget widgets: the trace stays in Python, the browser
gets what it draws (``notebook.payload``), and the selection is shared both ways.

Traits ``kind``, ``layer``, ``head`` (and ``query``, a query row the reader clicked, -1 for
none) are synced: a click in the view sets them in Python (``widget.observe`` fires), and setting
them in Python redraws the view. The JavaScript and CSS ship in ``notebook/static/`` (no build
step, no network).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from viz_transformer.notebook import payload
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace

STATIC = Path(__file__).resolve().parent / "static"


class AttentionView(anywidget.AnyWidget):
    """What both views share: the trace, the synced selection and the data drawn.

    Args:
        trace: from ``vt.trace``; kind: the attention kind shown first (None: the first the
            trace has); layer, head: the head selected first.

    Raises:
        ValueError: a kind the trace lacks, or a layer or head out of range (also when set
            later, as a ``traitlets.TraitError`` with the same message).
    """

    _esm = STATIC / "widget.js"
    _css = STATIC / "widget.css"

    view = traitlets.Unicode("head").tag(sync=True)
    kind = traitlets.Unicode().tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    query = traitlets.Int(-1).tag(sync=True)
    start = traitlets.Int(0).tag(sync=True)  # the head view's first query row (long inputs)
    header = traitlets.Dict().tag(sync=True)
    grid = traitlets.Dict().tag(sync=True)
    lines = traitlets.Dict().tag(sync=True)
    focus = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        trace: Trace,
        kind: AttentionKind | None = None,
        layer: int = 0,
        head: int = 0,
        **kwargs: Any,
    ) -> None:
        chosen = payload.checked(trace, kind, layer, head)
        self._trace, layer, head = trace, int(layer), int(head)
        view = type(self).view.default_value
        drawn = {"grid": payload.grid(trace, chosen)}
        if view == "head":
            drawn["lines"] = payload.lines(trace, chosen, layer)
        else:
            drawn["focus"] = payload.focus(trace, chosen, layer, head)
        keys = {"grid": (chosen,), "lines": (chosen, layer, 0), "focus": (chosen, layer, head)}
        self._drawn = {name: keys[name] for name in drawn}  # what the browser has, by its inputs
        super().__init__(
            header=payload.header(trace), kind=chosen, layer=layer, head=head, **drawn, **kwargs
        )

    @property
    def trace(self) -> Trace:
        """The record shown (kept in Python; the browser has only what it draws)."""
        return self._trace

    @property
    def selected(self) -> tuple[str, int, int]:
        """``(kind, layer, head)`` selected now."""
        return self.kind, self.layer, self.head

    def _shape(self, kind: str | None = None) -> list[int]:
        return self.header["kinds"][kind or self.kind]["shape"]

    @traitlets.validate("kind")
    def _valid_kind(self, proposal: dict[str, Any]) -> str:
        try:
            return payload.first_kind(self._trace, proposal["value"])
        except ValueError as err:
            raise traitlets.TraitError(str(err)) from None

    def _check(self, what: str, value: int, count: int) -> int:
        if not 0 <= value < count:
            raise traitlets.TraitError(
                f"{what} {value} does not exist: {self.kind} has {count} "
                f"{'query rows' if what == 'query' else what + 's'} (0-{count - 1})."
            )
        return value

    @traitlets.validate("layer")
    def _valid_layer(self, proposal: dict[str, Any]) -> int:
        return self._check("layer", proposal["value"], self._shape()[0])

    @traitlets.validate("head")
    def _valid_head(self, proposal: dict[str, Any]) -> int:
        return self._check("head", proposal["value"], self._shape()[1])

    @traitlets.validate("query")
    def _valid_query(self, proposal: dict[str, Any]) -> int:
        value = proposal["value"]
        return -1 if value < 0 else self._check("query", value, self._shape()[2])

    @traitlets.observe("kind")
    def _kind_changed(self, change: dict[str, Any]) -> None:
        """Another kind may have fewer layers, heads or rows: keep the selection inside it."""
        n_layers, n_heads, n_q = self._shape(change["new"])[:3]
        with self.hold_sync():
            self.layer, self.head = min(self.layer, n_layers - 1), min(self.head, n_heads - 1)
            self.query = min(self.query, n_q - 1)
            self.start = 0
            self._refresh()

    @traitlets.observe("layer", "head", "start")
    def _selection_changed(self, change: dict[str, Any]) -> None:
        self._refresh()

    def _refresh(self) -> None:
        """Recompute what the view draws and whose inputs changed (nothing else is sent)."""
        wanted: dict[str, tuple] = {"grid": (self.kind,)}
        if self.view == "head":
            wanted["lines"] = (self.kind, self.layer, self.start)
        else:
            wanted["focus"] = (self.kind, self.layer, self.head)
        for name, key in wanted.items():
            if self._drawn.get(name) == key:
                continue
            self._drawn[name] = key
            if name == "grid":
                self.grid = payload.grid(self._trace, self.kind)
            elif name == "lines":
                self.lines = payload.lines(self._trace, self.kind, self.layer, self.start)
            else:
                self.focus = payload.focus(self._trace, self.kind, self.layer, self.head)

    def on_select(self, fn: Callable[[str, int, int], object]) -> Callable[[dict], None]:
        """Call ``fn(kind, layer, head)`` whenever the selection changes (a click or Python).

        Returns:
            the observer, for ``widget.unobserve(observer, names=[...])``.
        """

        def observer(change: dict) -> None:
            fn(self.kind, self.layer, self.head)

        self.observe(observer, names=["kind", "layer", "head"])
        return observer


class HeadView(AttentionView):
    """BertViz's head view: queries on the left, keys on the right, a line per weight coloured
    by head (the selected head on top), and every head of the kind as a grid of small maps."""

    view = traitlets.Unicode("head").tag(sync=True)


class ModelView(AttentionView):
    """Every layer x head as a small map (block maxima); a click selects one, drawn large."""

    view = traitlets.Unicode("model").tag(sync=True)
