"""Nothing is told by colour alone (WCAG 1.4.1, issue 42): series differ by dash and marker
(positional-encoding curves, rotary offsets, each head's drift), the head view's heads by dash,
and the decoder's model-versus-reference row says ✓ or ✗ in each cell."""

from __future__ import annotations

import numpy as np

import viz_transformer as vt
from viz_transformer.analysis.decoding import Alignment
from viz_transformer.figures import compare, describe, positional, rope
from viz_transformer.figures.decoder import alignment_figure
from viz_transformer.figures.head_view import head_view_figure


def _styles(fig) -> list[tuple[str, str]]:
    return [(t.line.dash, t.marker.symbol) for t in fig.data]


def test_each_series_has_its_own_dash_and_marker():
    table = np.random.default_rng(0).normal(size=(20, 8))
    curves = positional.curves_figure(table, [0, 1, 2, 3], ["a", "b", "c", "d"])
    offsets = rope.offset_figure(np.ones((3, 9)), [0, 4, 8])
    drift = compare.drift_figure(np.random.default_rng(1).random((3, 2, 3)), [10, 20, 30], 4)
    for fig in (curves, offsets, drift):
        styles = _styles(fig)
        assert len(set(styles)) == len(styles), styles  # no two series alike in shape
        assert all("markers" in t.mode for t in fig.data)
    assert drift.data[4].line.width == 4 and drift.data[0].line.width == 1.5  # the chosen head


def test_the_model_row_marks_each_token_right_or_wrong():
    fig = alignment_figure(Alignment(("Eu", "sou", "um"), ("Eu", "era", "um", "aluno"), 1))
    model, reference = fig.data[0].text
    assert list(model) == ["Eu<br>✓", "sou<br>✗", "um<br>✓", ""]
    assert list(reference) == ["Eu", "era", "um", "aluno"]
    assert "✓ same token as the reference, ✗ not" in fig.layout.title.text


def test_the_head_view_sets_heads_apart_by_dash_and_says_each_heads_strongest_line(tiny):
    trace = vt.trace(tiny, "alpha beta gamma")
    fig = head_view_figure(trace, "encoder", 0, [0, 1])
    dashes = {t.legendgroup: t.line.dash for t in fig.data if t.legendgroup}
    assert dashes["head 0"] != dashes["head 1"]
    w = trace.encoder[0, 1]
    i, j = np.unravel_index(np.argmax(w), w.shape)
    src = trace.src_tokens
    assert f"head 1: ‘{src[i]}’ to ‘{src[j]}’ ({w[i, j]:.3f})" in describe.describe(fig)
    table = describe.drawn_values(fig)
    assert list(table.columns) == ["head", "query", "key", "weight"]
    assert set(table["head"]) == {0, 1} and table["weight"].min() >= 0.02


def test_the_chosen_head_among_all_is_a_diamond_not_only_red():
    import pandas as pd

    from viz_transformer.figures.corpus_head import heads_strip_figure

    beside = pd.DataFrame({"kind": ["encoder"] * 3, "layer": [0, 0, 1], "head": [0, 1, 0],
                           "entropy": [0.1, 0.5, 0.9], "picked": [False, True, False]})  # fmt: skip
    fig = heads_strip_figure(beside, ("entropy",), "t")
    symbols = {t.name: t.marker.symbol for t in fig.data}
    assert symbols == {"other heads": "circle", "this head": "diamond"}
