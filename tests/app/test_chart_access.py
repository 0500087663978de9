"""Every chart on every page reads without sight of its colours or a mouse (issue 42): an
accessible name (the chart's ``alt``), a description in the page of what it shows and its
strongest values (``figures.describe`` of the figure drawn), and its numbers one keyboard action
away ("Show the numbers" shows them as a table); no plotly toolbar in the Tab order."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from viz_transformer.figures import describe

PAGES = {  # page file, URL view -> the charts it draws at least
    "app.py": ({}, 3),
    "pages/attention_maps.py": ({}, 2),
    "pages/attention_maps.py#aggregate": ({"attn_tab": "Mean / max / rollout"}, 1),
    "pages/positional_encoding.py": ({}, 5),
    "pages/softmax_saturation.py": ({}, 5),
    "pages/decoder_steps.py": ({}, 3),
    "pages/qkv_walkthrough.py": ({}, 3),
    "pages/compare_models.py": ({"cmp_kind": "cross"}, 1),
    "pages/attention_maps.py#head-view": ({"attn_tab": "Head view"}, 1),
    "pages/what_heads_do.py": ({}, 5),
}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_chart_has_its_name_description_and_table(open_page, page):
    params, least = PAGES[page]
    at = open_page(page.split("#")[0], params=params)
    charts = at.get("plotly_chart")
    assert len(charts) >= least
    texts = {t.value for t in at.text}
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        name = chart.proto.alt
        assert name and name == describe.chart_name(go.Figure(spec), name), name
        words = describe.describe(go.Figure(spec))
        assert f"{name}: {words}" in texts, f"no description of {name!r}"
        assert chart.proto.config and json.loads(chart.proto.config)["displayModeBar"] is False
    switches = [t for t in at.toggle if str(t.key).startswith("numbers-")]
    assert len(switches) == len(charts)  # one "Show the numbers" per chart
    before = len(at.dataframe)
    for switch in switches:
        switch.set_value(True)
    at.run()
    assert not at.exception, at.exception
    assert len(at.dataframe) - before == len(charts)  # each shows the drawn values
