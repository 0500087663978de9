"""Every figure as SVG, PDF and PNG, rendered in Debian's Chromium through kaleido, offline: the
files are what their format says and carry the figure's own text and size."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from viz_transformer.figures.heatmap import heatmap
from viz_transformer.ui import figure_export as export

pytestmark = [pytest.mark.slow, pytest.mark.needs("kaleido", "chromium")]  # kaleido drives it


@pytest.fixture(scope="module")
def figure() -> go.Figure:
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(4), size=3).astype(np.float32)
    fig = heatmap(weights, ["<s>", "Eu", "sou"], ["I", "am", "here", "."], "Cross L0 H1", "output")
    return fig.update_layout(width=640, height=420)


def test_svg_is_vector_with_the_figures_text(figure: go.Figure) -> None:
    if export.export_problem():
        pytest.fail(export.export_problem())  # CI installs chromium: a miss is a broken install
    svg = export.figure_bytes(figure, "svg").decode()
    assert svg.lstrip().startswith("<svg")
    assert 'width="640"' in svg and 'height="420"' in svg
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "Cross L0 H1" in " ".join(texts)
    assert {"I", "am", "Eu", "sou"} <= set(texts)


def test_pdf_and_png_are_real_files(figure: go.Figure) -> None:
    pdf = export.figure_bytes(figure, "pdf")
    assert pdf.startswith(b"%PDF-") and pdf.rstrip().endswith(b"%%EOF")
    png = export.figure_bytes(figure, "png", scale=2.0)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1280, 840)  # the figure's size times the scale
