"""The head view and the model view as anywidget widgets: the trace stays in Python, the browser
gets what it draws (``notebook.payload``), and the selection is shared both ways.

Traits ``kind``, ``layer``, ``head`` (and ``query``, a query row the reader clicked, -1 for
none; ``hidden``, the heads whose lines the head view hides) are synced: a click in the view sets
them in Python (``widget.observe`` fires), and setting them in Python redraws the view. The
JavaScript and CSS ship in ``notebook/static/`` (no build step, no network).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from viz_transformer.notebook import export, payload, query_key
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
    hidden = traitlets.List(traitlets.Int()).tag(sync=True)  # heads whose lines are hidden
    uid = traitlets.Unicode().tag(sync=True)  # the static snapshot's id (hidden while live)
    qk = traitlets.Dict().tag(sync=True)  # the selected query's scores split (head view, model)
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
        model: Any = None,
        text: str | None = None,
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
        self._shown: list = []  # display handles of the static snapshot, updated on a change
        self._last_svg = ""
        self._model, self._text, self._captures = model, text, {}
        self._panel: ThreadPoolExecutor | None = None  # computes the query-key panel
        self._panel_done: Future | None = None
        uid = f"vt-snap-{uuid.uuid4().hex[:12]}"
        super().__init__(
            header=payload.header(trace),
            kind=chosen,
            layer=layer,
            head=head,
            uid=uid,
            **drawn,
            **kwargs,
        )

    def snapshot(self) -> str:
        """The view as it is now, as SVG drawn in Python (``notebook.export.snapshot``)."""
        names = ("view", "header", "kind", "layer", "head", "lines", "focus", "hidden", "query")
        return export.snapshot({name: getattr(self, name) for name in names}, self.uid)

    def _ipython_display_(self) -> None:
        """Two outputs: the live widget, and an SVG snapshot of the view that a saved notebook,
        nbconvert's HTML and a repository's preview show without a kernel (the live widget
        hides it while it runs; a change of the selection updates it)."""
        from IPython.display import display

        live = self._repr_mimebundle_()  # ipywidgets: (data, metadata)
        data, meta = live if isinstance(live, tuple) else (live, {})
        display(data, metadata=meta, raw=True)
        self._last_svg = self.snapshot()
        bundle = {"image/svg+xml": self._last_svg, "text/plain": repr(self)}
        self._shown.append(display(bundle, raw=True, display_id=True))

    @traitlets.observe("kind", "layer", "head", "hidden", "query", "lines", "focus")
    def _update_snapshot(self, change: dict[str, Any]) -> None:
        if not self._shown:
            return
        svg = self.snapshot()
        if svg != self._last_svg:  # a click changes several traits: one update per new picture
            self._last_svg = svg
            for handle in self._shown:
                handle.update({"image/svg+xml": svg, "text/plain": repr(self)}, raw=True)

    def save(self, path: str | Path) -> Path:
        """Write the view as a self-contained, offline, interactive HTML page (the widget's
        JavaScript and CSS, and every layer's lines or every head's map, inlined; no network).

        Returns:
            the path written.
        """
        state = {
            name: getattr(self, name)
            for name in ("view", "header", "kind", "layer", "head", "query", "hidden", "uid", "qk")
        }
        esm, css = (STATIC / "widget.js").read_text(), (STATIC / "widget.css").read_text()
        path = Path(path)
        path.write_text(export.page(self._trace, state, esm, css), encoding="utf-8")
        return path

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

    @traitlets.validate("hidden")
    def _valid_hidden(self, proposal: dict[str, Any]) -> list[int]:
        n_heads = self._shape()[1]
        return sorted({self._check("head", h, n_heads) for h in proposal["value"]})

    @traitlets.observe("kind")
    def _kind_changed(self, change: dict[str, Any]) -> None:
        """Another kind may have fewer layers, heads or rows: keep the selection inside it."""
        n_layers, n_heads, n_q = self._shape(change["new"])[:3]
        with self.hold_sync():
            self.layer, self.head = min(self.layer, n_layers - 1), min(self.head, n_heads - 1)
            self.query = min(self.query, n_q - 1)
            self.start = 0
            self._refresh()
            self._explain()

    @traitlets.observe("layer", "head", "start", "query")
    def _selection_changed(self, change: dict[str, Any]) -> None:
        self._refresh()
        self._explain()

    def _explain(self) -> None:
        """The query-key panel of the selected query (the head view, given the model), computed
        in a thread of the widget's own: the kernel keeps answering clicks meanwhile, and the
        browser shows that the panel is on its way (``qk["pending"]``)."""
        if self._model is None or self.view != "head" or self.query < 0:
            if self.qk:
                self.qk = {}
            return
        where = (self.kind, self.layer, self.head, self.query)
        if tuple(self.qk.get(k) for k in ("kind", "layer", "head", "query")) == where:
            return
        self.qk = dict(zip(("kind", "layer", "head", "query"), where, strict=True)) | {
            "pending": True
        }
        if self._panel is None:
            self._panel = ThreadPoolExecutor(1, thread_name_prefix="vt-query-key")
        self._panel_done = self._panel.submit(self._explain_in_thread, where)

    def _explain_in_thread(self, where: tuple[str, int, int, int]) -> None:
        if (self.kind, self.layer, self.head, self.query) != where:
            return  # the reader moved on before this one started: the newer request follows
        done = query_key.parts(self._model, self._text, self._trace, *where, self._captures)
        if (self.kind, self.layer, self.head, self.query) == where:
            self.qk = done

    def explained(self, timeout: float | None = 60) -> dict[str, Any]:
        """Wait for the query-key panel of the selection and return its numbers (``qk``).

        Raises:
            TimeoutError: the panel took longer than ``timeout`` seconds.
        """
        if self._panel_done is not None:
            self._panel_done.result(timeout)
        return self.qk

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
