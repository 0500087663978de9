"""The why figures say what they draw: a score's parts in score units, a head's writes titled
with its tokens as typed."""

from __future__ import annotations

import pandas as pd

from viz_transformer.figures import why


def test_a_scores_parts_are_drawn_in_score_units_not_as_shares() -> None:
    parts = pd.DataFrame({"part": ["d0", "d1", "rest"], "value": [3.0, -1.25, 0.0]})
    fig = why.parts_bars(parts, "By dimension of q · k")
    assert list(fig.data[0].y) == [3.0, -1.25]  # the parts as they are, summing to the score
    axis = fig.layout.yaxis.title.text
    assert "score units" in axis and "share" not in axis  # a share would sum to 1, not 1.75
