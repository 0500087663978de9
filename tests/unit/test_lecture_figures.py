"""Issue 28's figure helpers: a long title set outside a narrow chart, numbers in cells scaled."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz_transformer.figures.common import labels, scaled_fonts, title_outside
from viz_transformer.figures.heads import head_grid


def test_a_title_too_long_for_its_width_leaves_the_figure_as_plain_text():
    fig = go.Figure(
        layout={"title": {"text": "encoder &lt;s&gt; weights, layer 5<br><sup>note</sup>"}}
    )
    same, none = title_outside(fig, 40)
    assert same is fig and none is None
    out, text = title_outside(fig, 20)
    assert text == "encoder <s> weights, layer 5 — note"
    assert not out.layout.title.text and fig.layout.title.text  # the cached figure is unchanged


def test_presenter_mode_scales_the_numbers_written_in_cells_with_the_ticks():
    fig = scaled_fonts(head_grid(np.zeros((2, 3)), "importance", "nats"), 1.6)
    assert fig.data[0].textfont.size == fig.layout.xaxis.tickfont.size == 19.2


def test_a_checkpoints_maps_carry_their_query_and_key_tokens(tiny):
    import viz_transformer as vt
    from viz_transformer.figures.compare import checkpoint_maps

    tr = vt.trace(tiny, "alpha beta gamma")
    fig = checkpoint_maps([tr, tr, tr], [10, 20, 30], "cross", (1, 0))
    rows, cols = tr.tokens_for("cross")
    assert list(fig.layout.xaxis.ticktext) == list(labels(cols))  # the keys, on the first map
    assert list(fig.layout.yaxis.ticktext) == list(labels(rows))
    assert not fig.layout.xaxis2.showticklabels  # the others: hover names the tokens
    assert fig.data[1].text[0][0] == f"{labels(rows)[0]} → {labels(cols)[0]}"
