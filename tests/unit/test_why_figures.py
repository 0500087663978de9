"""The why figures say what they draw: a score's parts in score units, a head's writes titled
with its tokens as typed."""

from __future__ import annotations

import pandas as pd

from viz_transformer.analysis.writes import content_position
from viz_transformer.figures import describe, why


def test_a_scores_parts_are_drawn_in_score_units_not_as_shares() -> None:
    parts = pd.DataFrame({"part": ["d0", "d1", "rest"], "value": [3.0, -1.25, 0.0]})
    fig = why.parts_bars(parts, "By dimension of q · k")
    assert list(fig.data[0].y) == [3.0, -1.25]  # the parts as they are, summing to the score
    axis = fig.layout.yaxis.title.text
    assert "score units" in axis and "share" not in axis  # a share would sum to 1, not 1.75


def test_a_heads_writes_title_shows_its_tokens_as_typed() -> None:
    up = pd.DataFrame({"token": ["<b>", "cat"], "id": [5, 7], "logit": [2.0, 1.0]})
    down = pd.DataFrame({"token": ["dog", "&"], "id": [9, 3], "logit": [-1.0, -2.0]})
    fig = why.writes_bars(up, down, "L1 H3", "5: . → </s>")
    title = fig.layout.title.text  # plotly reads tags in a title: </s> would vanish unescaped
    assert title == "L1 H3 at 5: . → &lt;/s&gt;: tokens it promotes and suppresses"
    assert describe.chart_name(fig, "writes").startswith("L1 H3 at 5: . → </s>:")
    assert list(fig.data[0].y) == ["&lt;b&gt; (5)", "cat (7)", "&amp; (3)", "dog (9)"]


def test_the_first_position_of_a_heads_writes_is_a_content_token() -> None:
    tokens = ("<s>", "Eu", "sou", "um", "estudante", ".")
    predicted = ("Eu", "sou", "um", "estudante", ".", "</s>")
    assert content_position(tokens, predicted) == 3  # um -> estudante; not . -> </s>
    assert content_position(tokens) == 4  # no predictions known: the last word
    assert content_position(("ĠThe", "Ġcat", "<|endoftext|>")) == 1
    assert content_position(("<s>", "</s>")) == 1  # nothing else: the last position
