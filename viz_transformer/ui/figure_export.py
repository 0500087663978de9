"""Figures as files for papers and slides: SVG, PDF and PNG rendered on the server by plotly's
``kaleido`` in a headless Chromium (Debian's ``chromium``), with nothing fetched from outside.

A render starts a browser (2-3 s, 150 MB), so renders take turns in one line per process
(``QUEUE``, ``export_queue``): one at a time, at most ``settings.EXPORT_QUEUE`` waiting (the
download requests wait in Streamlit's worker threads, six on two cores), one more refused at once
with a message that says when to try again. It lives above ``figures/`` (pure functions of
records): it starts processes and makes people wait. No Streamlit: a notebook calls
``figure_bytes`` too.

kaleido's page loads MathJax from a CDN unless told otherwise, and plotly.js from the plotly wheel;
we pass both explicitly (no MathJax: our figures set no LaTeX), so an export works offline. Where no
Chromium or kaleido is installed, ``export_problem()`` says why, and the app falls back to the
browser's own SVG export (plotly's camera button).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import plotly
import plotly.graph_objects as go

from viz_transformer.settings import EXPORT_QUEUE
from viz_transformer.ui.export_queue import ExportQueue

Format = Literal["svg", "pdf", "png"]
FORMATS: tuple[Format, ...] = ("svg", "pdf", "png")
MIME = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}
DEFAULT_SIZE = (1000, 600)  # px of a figure that sets no size of its own (pdf: 1 px = 1/96 in)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# one export at a time per process: a class that downloads at once waits in a short line instead
# of running 30 browsers on 2 cores, and is told how long
QUEUE = ExportQueue(waiting=EXPORT_QUEUE, workers=1)


def browser_path() -> str | None:
    """The Chromium kaleido drives: ``BROWSER_PATH`` when set, else the first on ``PATH``."""
    given = os.environ.get("BROWSER_PATH")
    if given:
        return given if Path(given).is_file() else None
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def export_problem() -> str | None:
    """Why figures cannot be exported on this machine (a sentence with the fix), or None."""
    if importlib.util.find_spec("kaleido") is None:
        return "Server-side export needs the `kaleido` package: `pip install -r requirements.txt`."
    if browser_path() is None:
        return (
            "Server-side export needs a Chromium: `apt-get install chromium` "
            "(or set BROWSER_PATH); "
            "until then plotly's camera button saves SVG from your browser."
        )
    return None


def figure_bytes(
    fig: go.Figure,
    fmt: Format,
    scale: float = 1.0,
    on_wait: Callable[[int, float], None] | None = None,
) -> bytes:
    """``fig`` rendered as ``fmt``, at its own size (``DEFAULT_SIZE`` where it sets none), when
    its turn in ``QUEUE`` comes.

    Args:
        fig: any plotly figure (left unchanged).
        fmt: ``"svg"``, ``"pdf"`` (vector: text stays text) or ``"png"``.
        scale: pixel density of a PNG (2 for slides); vector formats ignore it.
        on_wait: told the figures ahead and about how many seconds before this one starts, when
            it must wait.

    Returns:
        The file's bytes.

    Raises:
        RuntimeError: when kaleido or a browser is missing (the message says how to fix it), or
            the browser failed to render.
        QueueFull: a full line (``export_queue.QueueFull``, a ``RuntimeError``), at once.
    """
    if fmt not in FORMATS:
        raise ValueError(f"Unknown figure format {fmt!r}: use one of {', '.join(FORMATS)}.")
    problem = export_problem()
    if problem:
        raise RuntimeError(problem)
    import kaleido  # imported on first export: it starts nothing until called

    width = fig.layout.width or DEFAULT_SIZE[0]
    height = fig.layout.height or DEFAULT_SIZE[1]
    opts = {"format": fmt, "width": width, "height": height, "scale": scale}
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    kopts = {"mathjax": False, "plotlyjs": plotly_js.as_uri(), "timeout": 60}
    spec = fig.to_dict()

    def render() -> bytes:  # choreographer finds the same browser: BROWSER_PATH, else PATH
        try:
            return bytes(kaleido.calc_fig_sync(spec, opts=opts, kopts=kopts))
        except Exception as exc:  # kaleido wraps browser failures in its own exception types
            raise RuntimeError(f"The figure could not be rendered as {fmt.upper()}: {exc}") from exc

    return QUEUE.run(render, on_wait)
