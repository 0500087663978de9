"""Figures as files for papers and slides: SVG, PDF and PNG rendered on the server by plotly's
``kaleido`` in a headless Chromium (Debian's ``chromium``), with nothing fetched from outside.

kaleido's page loads MathJax from a CDN unless told otherwise, and plotly.js from the plotly wheel;
we pass both explicitly (no MathJax: our figures set no LaTeX), so an export works offline. Where no
Chromium or kaleido is installed, ``export_problem()`` says why, and the app falls back to the
browser's own SVG export (plotly's camera button).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
from pathlib import Path
from typing import Literal

import plotly
import plotly.graph_objects as go

Format = Literal["svg", "pdf", "png"]
FORMATS: tuple[Format, ...] = ("svg", "pdf", "png")
MIME = {"svg": "image/svg+xml", "pdf": "application/pdf", "png": "image/png"}
DEFAULT_SIZE = (1000, 600)  # px of a figure that sets no size of its own (pdf: 1 px = 1/96 in)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# one export at a time per process: each starts a browser (about 2-3 s, 150 MB); a class that
# downloads at once waits in line instead of running 30 browsers on 2 cores
_LOCK = threading.Lock()


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


def figure_bytes(fig: go.Figure, fmt: Format, scale: float = 1.0) -> bytes:
    """``fig`` rendered as ``fmt``, at its own size (``DEFAULT_SIZE`` where it sets none).

    Args:
        fig: any plotly figure (left unchanged).
        fmt: ``"svg"``, ``"pdf"`` (vector: text stays text) or ``"png"``.
        scale: pixel density of a PNG (2 for slides); vector formats ignore it.

    Returns:
        The file's bytes.

    Raises:
        RuntimeError: when kaleido or a browser is missing (the message says how to fix it), or
            the browser failed to render.
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
    with _LOCK:  # choreographer finds the same browser: BROWSER_PATH, else PATH
        try:
            data = kaleido.calc_fig_sync(fig.to_dict(), opts=opts, kopts=kopts)
        except Exception as exc:  # kaleido wraps browser failures in its own exception types
            raise RuntimeError(f"The figure could not be rendered as {fmt.upper()}: {exc}") from exc
    return bytes(data)
