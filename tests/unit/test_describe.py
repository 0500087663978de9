"""``figures.describe``: every chart's name, its description in words (for a head map which token
attends most to which, and how much) and its drawn values as a table, read from the figure."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from viz_transformer.figures import describe
from viz_transformer.figures.common import labels, title_outside
from viz_transformer.figures.heatmap import heatmap

Z = np.array([[0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
ROWS = ("<s>", "the", "the")  # a repeated token keeps its own row
COLS = ("I", "am", "</s>")


def _head_map() -> go.Figure:
    return heatmap(Z, labels(ROWS), labels(COLS), "Layer 2, head 5: cross-attention", "query")


def test_a_head_map_says_which_token_attends_most_to_which_and_how_much():
    words = describe.describe(_head_map())
    assert "3 rows (query) by 3 columns (key (attended to))" in words
    assert "values from 0.100 to 0.800" in words
    # the three rows, strongest first (ties in row order), each with its strongest key
    assert (
        "Strongest rows: ‘<s>’ attends most to ‘am’ (0.800); ‘the (1)’ attends most to ‘I’ "
        "(0.600); ‘the (2)’ attends most to ‘</s>’ (0.600)."
    ) in words


def test_masked_cells_are_skipped_and_an_empty_map_says_so():
    z = np.array([[1.0, np.nan], [0.3, 0.7]])
    words = describe.describe(heatmap(z, ["a", "b"], ["a", "b"], "causal", "query"))
    assert "‘a’ attends most to ‘a’ (1)" in words and "‘b’ attends most to ‘b’ (0.700)" in words
    empty = heatmap(np.full((2, 2), np.nan), ["a", "b"], ["a", "b"], "t", "q")
    assert "every cell empty" in describe.describe(empty)


def test_a_map_that_is_not_attention_says_where_each_row_is_highest():
    fig = go.Figure(go.Heatmap(z=[[1.0, 5.0], [2.0, 0.5]], x=["p", "q"], y=["r", "s"]))
    assert "‘r’ is highest at ‘q’ (5)" in describe.describe(fig)


def test_the_table_of_a_map_is_its_matrix_labelled_by_the_tokens():
    table = describe.drawn_values(_head_map())
    assert list(table.index) == ["<s>", "the (1)", "the (2)"]
    assert list(table.columns) == ["I", "am", "</s>"]
    np.testing.assert_array_equal(table.to_numpy(), Z)


def test_series_are_named_with_their_highest_and_lowest_points_and_tabled_side_by_side():
    fig = go.Figure(
        [go.Scatter(x=[0, 1, 2], y=[0.5, 2.0, -1.0], name="dim 0"),
         go.Scatter(x=[0, 1, 2], y=[3.0, 1.0, 0.0], name="dim 1")]
    )  # fmt: skip
    words = describe.describe(fig)
    assert words.startswith("2 series of lines: ")
    assert "‘dim 0’ highest 2 at 1, lowest -1 at 2" in words
    assert "‘dim 1’ highest 3 at 0, lowest 0 at 2" in words
    table = describe.drawn_values(fig)
    assert list(table["series"]) == ["dim 0"] * 3 + ["dim 1"] * 3
    assert list(table["y"]) == [0.5, 2.0, -1.0, 3.0, 1.0, 0.0]


def test_horizontal_bars_read_their_values_along_x_and_their_labels_along_y():
    fig = go.Figure(go.Bar(x=[0.2, -0.4, 0.9], y=["a", "b", "c"], orientation="h", name="split"))
    assert describe.describe(fig) == "Bars: ‘split’ highest 0.900 at c, lowest -0.400 at b."


def test_many_series_are_counted_after_the_first_six():
    fig = go.Figure([go.Scatter(y=[i, i + 1], name=f"s{i}") for i in range(9)])
    assert describe.describe(fig).endswith("; and 3 more.")


def test_a_histogram_gives_its_range_and_median():
    fig = go.Figure(go.Histogram(x=[1.0, 2.0, 3.0, 10.0], name="norms"))
    assert describe.describe(fig) == "Histogram: ‘norms’: 4 values from 1 to 10, median 2.5."
    assert describe.drawn_values(fig)["count"].sum() == 4


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Layer 1, head 0: &lt;/s&gt; row<br><sup>special tokens hidden</sup>",
         "Layer 1, head 0: </s> row"),
        (None, "attention cross L1 H0"),
    ],
)  # fmt: skip
def test_the_name_is_the_titles_first_line_or_the_file_stem_in_words(title, name):
    fig = go.Figure(go.Heatmap(z=[[1.0]]), layout={"title": {"text": title}})
    assert describe.chart_name(fig, "attention-cross-L1-H0") == name


def test_a_title_set_above_the_chart_still_names_it():
    fig, above = title_outside(_head_map(), 10)
    assert above and fig.layout.title.text is None
    assert describe.chart_name(fig, "stem") == "Layer 2, head 5: cross-attention"


def test_points_on_a_row_of_names_are_read_along_x_and_text_values_never_fail():
    fig = go.Figure(go.Scatter(x=[0.1, 0.7], y=["L0 H0", "L0 H1"], mode="markers", name="drift"))
    assert (
        describe.describe(fig) == "Points: ‘drift’ highest 0.700 at L0 H1, lowest 0.100 at L0 H0."
    )
    words = go.Figure(go.Scatter(x=["a", "b"], y=["c", "d"], name="text"))
    assert describe.describe(words) == "Values: ‘text’ not described in words."


def _overview() -> go.Figure:
    from viz_transformer.figures.attention import overview_figure
    from viz_transformer.records.trace import Trace

    arr = np.full((2, 2, 3, 3), 1 / 3, dtype=np.float32)  # uniform heads: focus 1/3
    arr[1, 0] = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]  # each token looks at the next: focus 1
    arr[0, 1] = [[0.2, 0.7, 0.1], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]  # focus 2/3
    return overview_figure(Trace("m", ("a", "b", "<c>"), (), (), arr, None, None), "encoder")


def test_the_overview_is_described_by_its_heads_and_where_they_look_by_token():
    words = describe.describe(_overview())
    assert words.startswith("Every head as a small map (2 layers x 2 heads;")
    # most focused first, each with its two strongest queries (ties in row order) by token
    assert (
        "Most focused heads (focus: the mean of each query's largest weight): layer 1, head 0 "
        "(focus 1.00): ‘a’ attends most to ‘b’ (1.00), ‘b’ attends most to ‘<c>’ (1.00); "
        "layer 0, head 1 (focus 0.67): ‘<c>’ attends most to ‘<c>’ (0.80), ‘a’ attends most "
        "to ‘b’ (0.70); layer 0, head 0 (focus 0.33)"
    ) in words
    assert words.endswith("Least focused: layer 1, head 1 (focus 0.33).")
    assert not re.search(r"‘\d+’|rows by", words)  # no cell of the tiled grid


def test_the_overviews_table_has_one_row_per_head():
    table = describe.drawn_values(_overview())
    assert list(table.columns) == ["layer", "head", "focus", "strongest query", "its key", "weight"]
    assert table[["layer", "head"]].values.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    np.testing.assert_allclose(table["focus"], [1 / 3, 2 / 3, 1, 1 / 3], atol=1e-4)
    assert table.iloc[2][["strongest query", "its key"]].tolist() == ["a", "b"]
