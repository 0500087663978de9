"""Plotly figures that outlive the kernel and need no network: ``offline_figures()`` makes every
figure shown afterwards carry, beside plotly's JSON (which JupyterLab's and VS Code's plotly
renderers draw live), an HTML drawing of it: plotly.js inlined once, in the first figure's output,
and no MathJax. A saved notebook, its HTML export (docs/library.md) and a viewer without plotly's
extension then draw the figures with the network blocked.

Plotly's own ``notebook`` renderer cannot serve: each figure it draws loads MathJax from a CDN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# nbconvert's HTML template that loads nothing from the network (``--template-file``)
HTML_TEMPLATE = Path(__file__).parent / "static" / "offline.html.j2"
NAME = "vt_offline"  # the renderer's name in plotly.io.renderers
DEFAULT = f"plotly_mimetype+{NAME}"  # what offline_figures() sets


def _renderer() -> Any:
    from plotly.io import to_html
    from plotly.io.base_renderers import HtmlRenderer

    class OfflineHtmlRenderer(HtmlRenderer):
        """``text/html`` of a figure: a div and the script that draws it with the page's
        plotly.js (inlined by ``activate``, before the first figure), no MathJax, no CDN."""

        def __init__(self) -> None:
            super().__init__(connected=False, global_init=True, include_plotlyjs=False)

        def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
            html = to_html(
                fig_dict,
                config=self.config,
                include_plotlyjs=False,
                include_mathjax=False,
                full_html=False,
                default_width="100%",
                default_height=525,
                validate=False,
            )
            return {"text/html": html}

    return OfflineHtmlRenderer()


def offline_figures() -> str:
    """Make plotly figures shown from now on in this kernel carry their offline HTML drawing
    beside their JSON (the default renderer becomes ``plotly_mimetype+vt_offline``); returns it.
    The first figure's output also holds plotly.js (about 4.8 MB), once."""
    import plotly.io as pio

    if NAME not in pio.renderers:
        pio.renderers[NAME] = _renderer()
    pio.renderers.default = DEFAULT
    return DEFAULT
