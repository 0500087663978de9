"""``widgets.chart`` never changes the figure it draws (pages may pass one cached for all)."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from viz_transformer.ui import widgets


def _page() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from viz_transformer.ui import widgets

    fig = st.session_state.setdefault("fig", go.Figure(go.Heatmap(z=[[0.25, 0.75]])))
    widgets.chart(fig, "shared")


def test_presenter_mode_enlarges_a_copy_and_leaves_the_figure_as_it_was():
    at = AppTest.from_function(_page, default_timeout=30)
    at.session_state["presenter"] = True
    at.run().run()  # twice: a second run would see a first run's change
    assert not at.exception
    fig = at.session_state["fig"]
    assert fig.layout.font.size is None and fig.layout.title.font.size is None
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    scale = widgets.PRESENTER_SCALE  # plotly's default sizes (12 px text, 17 px titles), scaled
    assert spec["layout"]["font"]["size"] == pytest.approx(12 * scale)
    assert spec["layout"]["title"]["font"]["size"] == pytest.approx(17 * scale)
    assert spec["layout"]["xaxis"]["tickfont"]["size"] == pytest.approx(12 * scale)
    assert spec["data"][0]["colorbar"]["tickfont"]["size"] == pytest.approx(12 * scale)
    assert spec["data"][0]["z"] == [[0.25, 0.75]]

    at.session_state["presenter"] = False
    at.run()
    assert "font" not in json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]


def test_a_chart_in_a_third_of_the_page_exports_at_its_drawn_proportions():
    """Home's maps (a third of the page, 330 px tall) export about square, not 1000 x 330."""
    import plotly.graph_objects as go

    from viz_transformer.ui.figure_export import DEFAULT_SIZE
    from viz_transformer.ui.figure_files import as_drawn

    fig = go.Figure(go.Heatmap(z=[[1.0]]), layout={"height": 330})
    assert as_drawn(fig, 1 / 3).layout.width == round(DEFAULT_SIZE[0] / 3)
    assert fig.layout.width is None  # the chart's own figure is left as it was
    assert as_drawn(fig, 1.0) is fig
    assert as_drawn(go.Figure(layout={"width": 500}), 1 / 3).layout.width == 500
