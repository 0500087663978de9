"""Every chart on every page reads without sight of its colours or a mouse (issue 42): an
accessible name (the chart's ``alt``), a description in the page of what it shows and its
strongest values (``figures.describe`` of the figure drawn), and its numbers one keyboard action
away ("Show the numbers" shows them as a table); no plotly toolbar in the Tab order. A description
names what the charts draw (tokens, heads, series), never the cells of a grid (issue 49: the
overview was read as one 41 x 55 map, "'35' is highest at '35'")."""

from __future__ import annotations

import json
import re

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
    drawn = set().union(*(_drawn_names(go.Figure(json.loads(c.proto.spec))) for c in charts))
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        name = chart.proto.alt
        assert name and name == describe.chart_name(go.Figure(spec), name), name
        words = describe.describe(go.Figure(spec))
        assert f"{name}: {words}" in texts, f"no description of {name!r}"
        assert set(QUOTED.findall(words)) <= drawn, f"{name!r} says what no chart draws: {words}"
        assert chart.proto.config and json.loads(chart.proto.config)["displayModeBar"] is False
    switches = [t for t in at.toggle if str(t.key).startswith("numbers-")]
    assert len(switches) == len(charts)  # one "Show the numbers" per chart
    before = len(at.dataframe)
    for switch in switches:
        switch.set_value(True)
    at.run()
    assert not at.exception, at.exception
    assert len(at.dataframe) - before == len(charts)  # each shows the drawn values


QUOTED = re.compile(r"‘([^’]*)’")  # a label a description names


def _drawn_names(fig: go.Figure) -> set[str]:
    """What ``fig`` names where a reader sees it: its axes' tick labels (tokens, heads), the
    string coordinates of its traces, its series' names (``series 2`` when unnamed) and the text
    it draws; a heatmap's numeric coordinates only on an axis drawn as numbers (no tick labels),
    where a reader finds them (a position, a dimension), never a cell of a grid labelled
    otherwise."""
    names: set[str] = set()
    for i, trace in enumerate(fig.data):
        names.add(describe.plain(getattr(trace, "name", None)) or f"series {i + 1}")
        if getattr(trace, "mode", None) == "text" and trace.text is not None:
            names.update(describe.plain(t) for t in trace.text)
        for letter in "xy":
            if isinstance(trace, go.Heatmap) and trace.z is not None:
                z = describe._array(trace.z)
                n = z.shape[0 if letter == "y" else -1] if z.ndim == 2 else z.size
                ticks = describe._axis(fig, trace, letter).get("ticktext")
                names.update(describe._say(label) for label in describe.axis_labels(
                    fig, trace, letter, n) if not ticks or isinstance(label, str))  # fmt: skip
            coords = getattr(trace, letter, None)
            if coords is not None and not isinstance(coords, dict):
                names.update(describe.plain(c) for c in coords if isinstance(c, str))
    return names
